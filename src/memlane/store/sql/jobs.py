"""The durable job table and the lease locks, once for both SQL stores: statements over a connection the caller
holds inside a transaction, in the store's dialect.

A job is claimed with a lease (owner and expiry), renewed while it runs: a live job is never claimed again, and a
job whose owner died is claimed again once its lease lapses (or at once when ``is_dead`` says its owner is gone).
Its outcome is written only while its owner still holds it (``finish`` fences everything else). Where rows can be
locked (PostgreSQL), a claim skips rows another process is claiming (``FOR UPDATE SKIP LOCKED``) instead of queueing,
and the memories a finishing job read are held (``FOR SHARE``) so that a delete of one waits for it; SQLite's
writer lock serialises all of this already.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from memlane.models import Job, JobState
from memlane.store.outcome import JobClaim, JobFencedError, JobOutcome
from memlane.store.sql.dialect import Connection, Dialect
from memlane.store.sql.rows import from_micros, to_micros

_COLUMNS: Final = "SELECT id, user_id, kind, payload, state, attempts, error, created_at, updated_at, not_before"
_SELECT: Final = f"{_COLUMNS} FROM jobs"


def _job(row: tuple[Any, ...]) -> Job:
    return Job(
        id=row[0],
        user_id=row[1],
        kind=row[2],
        payload=json.loads(row[3]),
        state=JobState(row[4]),
        attempts=int(row[5]),
        error=row[6],
        created_at=from_micros(int(row[7])),
        updated_at=from_micros(int(row[8])),
        not_before=None if row[9] is None else from_micros(int(row[9])),
    )


class JobTable:
    """The job table's statements in one dialect (``memlane.store.jobqueue.JobTableSQL``)."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect

    def enqueue(self, c: Connection, job: Job, claim: JobClaim | None = None) -> None:
        """Insert a job as given (normally queued; a running job is inserted under ``claim``, already leased)."""
        running = job.state is JobState.RUNNING
        if running and claim is None:
            raise ValueError("a job inserted as running needs the claim that holds it")
        held = claim if running else None
        self.d.run(
            c,
            "INSERT INTO jobs (id, user_id, kind, payload, state, attempts, error, created_at, updated_at, "
            "lease_owner, lease_until, not_before) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                job.id,
                job.user_id,
                job.kind,
                json.dumps(job.payload, ensure_ascii=False),
                job.state.value,
                job.attempts,
                job.error,
                to_micros(job.created_at),
                to_micros(job.updated_at),
                held.owner if held else None,
                held.until if held else None,
                None if job.not_before is None else to_micros(job.not_before),
            ),
        )

    def finish(self, c: Connection, outcome: JobOutcome, at: int) -> None:
        """Record a job's outcome (done, or failed with its error), and its narrowed payload when given. A
        ``RUNNING`` outcome (an attempt that failed, under a runner that retries) records the error and the payload and
        leaves the job running under its lease: the runner then queues it again or dead-letters it, so no reader sees
        it failed in between.

        With an ``owner`` the job must still be running under that owner's lease, and every memory in ``requires``
        must still exist; otherwise ``JobFencedError`` is raised (inside the caller's transaction, which then rolls
        back whatever it wrote with the outcome).
        """
        d = self.d
        if outcome.owner is not None:
            row = d.run(
                c, f"SELECT user_id, state, lease_owner FROM jobs WHERE id = ?{d.lock('FOR UPDATE')}", (outcome.job_id,)
            ).fetchone()
            if row is None:
                raise JobFencedError(f"job {outcome.job_id} was cancelled (its user's memories were deleted)")
            if row[1] != JobState.RUNNING.value or row[2] != outcome.owner:
                raise JobFencedError(f"job {outcome.job_id} is no longer held by this process (its lease lapsed)")
            for chunk in d.chunks(sorted(set(outcome.requires))):
                among, params = d.in_list("id", chunk)
                found = d.run(
                    c,
                    f"SELECT id FROM memories WHERE {d.unindexed('user_id')} = ? AND {among}{d.lock('FOR SHARE')}",
                    (row[0], *params),
                ).fetchall()
                if len(found) != len(chunk):
                    raise JobFencedError(f"job {outcome.job_id} read memories that were deleted while it ran")
        if outcome.state is JobState.RUNNING:  # a failed attempt whose retry or dead letter the runner settles next
            d.run(c, "UPDATE jobs SET error = ?, updated_at = ? WHERE id = ?", (outcome.error, at, outcome.job_id))
        else:
            d.run(
                c,
                "UPDATE jobs SET state = ?, error = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL "
                "WHERE id = ?",
                (outcome.state.value, outcome.error, at, outcome.job_id),
            )
        if outcome.payload is not None:
            d.run(
                c,
                "UPDATE jobs SET payload = ? WHERE id = ?",
                (json.dumps(outcome.payload, ensure_ascii=False), outcome.job_id),
            )

    def claim(self, c: Connection, at: int, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The oldest job that is queued, or running under a lapsed lease or a dead owner, now running under
        ``claim`` with one more attempt; ``None`` when there is none. A job held back (``not_before`` still ahead:
        handed to a broker, or waiting out a retry's backoff) is left alone.
        """
        d = self.d
        owners = d.run(
            c,
            "SELECT DISTINCT lease_owner FROM jobs WHERE state = 'running' AND lease_owner IS NOT NULL "
            "AND lease_until >= ?",
            (at,),
        ).fetchall()
        orphan, dead = d.in_list("lease_owner", [str(r[0]) for r in owners if is_dead(str(r[0]))])
        row = d.run(
            c,
            f"{_SELECT} WHERE (state = 'queued' OR (state = 'running' AND (lease_until IS NULL OR lease_until < ? "
            f"OR {orphan}))) AND (not_before IS NULL OR not_before <= ?) "
            f"ORDER BY seq LIMIT 1{d.lock('FOR UPDATE SKIP LOCKED')}",
            (at, *dead, at),
        ).fetchone()
        if row is None:
            return None
        return self._take(c, row, at, claim)

    def claim_id(
        self, c: Connection, job_id: str, at: int, claim: JobClaim, is_dead: Callable[[str], bool]
    ) -> Job | None:
        """The job ``job_id``, now running under ``claim`` with one more attempt, if it is queued (whatever its
        ``not_before``: this is the delivery it was held back for) or running under a lapsed lease or a dead owner;
        ``None`` when it is done, failed, held by a live owner, or gone.
        """
        found = self.d.run(
            c, f"{_COLUMNS}, lease_owner, lease_until FROM jobs WHERE id = ?{self.d.lock('FOR UPDATE')}", (job_id,)
        ).fetchone()
        if found is None:
            return None
        state, owner, until = found[4], found[10], found[11]
        if state == JobState.QUEUED.value:
            return self._take(c, found[:10], at, claim)
        if state != JobState.RUNNING.value:
            return None
        if owner is None or until is None or int(until) < at or is_dead(str(owner)):
            return self._take(c, found[:10], at, claim)
        return None

    def _take(self, c: Connection, row: tuple[Any, ...], at: int, claim: JobClaim) -> Job:
        self.d.run(
            c,
            "UPDATE jobs SET state = ?, attempts = attempts + 1, updated_at = ?, lease_owner = ?, lease_until = ? "
            "WHERE id = ?",
            (JobState.RUNNING.value, at, claim.owner, claim.until, row[0]),
        )
        job = _job(row)
        return job.model_copy(
            update={"state": JobState.RUNNING, "attempts": job.attempts + 1, "updated_at": from_micros(at)}
        )

    def renew(self, c: Connection, job_id: str, claim: JobClaim) -> bool:
        """Extend a job's lease; ``False`` when this owner no longer holds it."""
        cur = self.d.run(
            c,
            "UPDATE jobs SET lease_until = ? WHERE id = ? AND state = 'running' AND lease_owner = ?",
            (claim.until, job_id, claim.owner),
        )
        return cur.rowcount > 0

    def retry_later(self, c: Connection, job_id: str, owner: str, error: str, not_before: int, at: int) -> bool:
        """Put a job back in the queue after a failed attempt (counted), held back until ``not_before``.

        The job must be running under ``owner``'s lease, or have just been recorded failed (by its own handler,
        which then let go of it); ``False`` otherwise (cancelled, or taken over meanwhile).
        """
        cur = self.d.run(
            c,
            "UPDATE jobs SET state = 'queued', error = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL, "
            "not_before = ? WHERE id = ? AND ((state = 'running' AND lease_owner = ?) OR (state = 'failed' "
            "AND lease_owner IS NULL))",
            (error, at, not_before, job_id, owner),
        )
        return cur.rowcount > 0

    def unhold(self, c: Connection, job_id: str) -> bool:
        """Let the queue scan take a queued job at once (its broker could not be reached)."""
        cur = self.d.run(c, "UPDATE jobs SET not_before = NULL WHERE id = ? AND state = 'queued'", (job_id,))
        return cur.rowcount > 0

    def release(self, c: Connection, job_id: str, owner: str, at: int) -> bool:
        """Put a job this owner holds back in the queue, its attempt not counted (it was deferred, not tried)."""
        cur = self.d.run(
            c,
            f"UPDATE jobs SET state = 'queued', attempts = {self.d.greatest}(attempts - 1, 0), updated_at = ?, "
            "lease_owner = NULL, lease_until = NULL WHERE id = ? AND state = 'running' AND lease_owner = ?",
            (at, job_id, owner),
        )
        return cur.rowcount > 0

    def acquire_lock(self, c: Connection, name: str, claim: JobClaim, at: int, is_dead: Callable[[str], bool]) -> bool:
        """Take (or, for its holder, extend) the named lock; ``False`` while another live owner holds it."""
        d = self.d
        taken = d.run(
            c,
            "INSERT INTO locks (name, owner, until) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
            (name, claim.owner, claim.until),
        )
        if taken.rowcount > 0:
            return True
        row = d.run(c, f"SELECT owner, until FROM locks WHERE name = ?{d.lock('FOR UPDATE')}", (name,)).fetchone()
        if row is not None and row[0] != claim.owner and int(row[1]) >= at and not is_dead(str(row[0])):
            return False
        d.run(
            c,
            "INSERT INTO locks (name, owner, until) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until",
            (name, claim.owner, claim.until),
        )
        return True

    def release_lock(self, c: Connection, name: str, owner: str) -> None:
        """Let go of the named lock if this owner holds it."""
        self.d.run(c, "DELETE FROM locks WHERE name = ? AND owner = ?", (name, owner))

    def get(self, c: Connection, user_id: str, job_id: str) -> Job | None:
        """One job of this user."""
        row = self.d.run(c, f"{_SELECT} WHERE user_id = ? AND id = ?", (user_id, job_id)).fetchone()
        return None if row is None else _job(row)

    def find(self, c: Connection, job_id: str) -> Job | None:
        """A job by its id alone, whoever's it is (callers check its scope)."""
        row = self.d.run(c, f"{_SELECT} WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else _job(row)

    def select(self, c: Connection, user_id: str | None, state: JobState | None, limit: int) -> list[Job]:
        """Jobs (of one user, or all), oldest first, optionally in one state."""
        parts: list[str] = []
        params: list[Any] = []
        if user_id is not None:
            parts.append("user_id = ?")
            params.append(user_id)
        if state is not None:
            parts.append("state = ?")
            params.append(state.value)
        where = f" WHERE {' AND '.join(parts)}" if parts else ""
        rows = self.d.run(c, f"{_SELECT}{where} ORDER BY seq LIMIT ?", (*params, limit)).fetchall()
        return [_job(r) for r in rows]

    def pending(self, c: Connection) -> int:
        """How many jobs are queued or running."""
        row = self.d.run(c, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()
        return int(row[0]) if row else 0

    def requeue(self, c: Connection, states: tuple[JobState, ...], user_id: str | None, at: int) -> int:
        """Put jobs in ``states`` back in the queue (on request: failed ones); their leases are cleared. A failed
        job starts a fresh round of attempts: a dead letter's count would dead-letter it again at its first claim.
        """
        among, values = self.d.in_list("state", [s.value for s in states])
        scope, params = ("AND user_id = ? ", [user_id]) if user_id is not None else ("", [])
        cur = self.d.run(
            c,
            "UPDATE jobs SET state = 'queued', updated_at = ?, lease_owner = NULL, lease_until = NULL, "
            f"not_before = NULL, attempts = CASE WHEN state = 'failed' THEN 0 ELSE attempts END WHERE {among} {scope}",
            (at, *values, *params),
        )
        return int(cur.rowcount)
