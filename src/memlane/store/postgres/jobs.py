"""The durable job table and the lease locks of the PostgreSQL store: SQL over a connection the caller holds inside
a transaction.

As in the SQLite store: a job is claimed with a lease (owner and expiry), renewed while it runs, claimed again once
its lease lapses or its owner is dead; its outcome is written only while its owner still holds it. Claims by several
processes at once skip each other's rows (``FOR UPDATE SKIP LOCKED``) instead of queueing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import psycopg

from memlane.models import Job, JobState
from memlane.store.outcome import JobClaim, JobFencedError, JobOutcome
from memlane.store.postgres.rows import run
from memlane.store.sqlite.rows import from_micros, to_micros

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


def enqueue(c: psycopg.Connection[Any], job: Job, claim: JobClaim | None = None) -> None:
    """Insert a job as given (normally queued; a running job is inserted under ``claim``, already leased)."""
    running = job.state is JobState.RUNNING
    if running and claim is None:
        raise ValueError("a job inserted as running needs the claim that holds it")
    held = claim if running else None
    run(
        c,
        "INSERT INTO jobs (id, user_id, kind, payload, state, attempts, error, created_at, updated_at, "
        "lease_owner, lease_until, not_before) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
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


def finish(c: psycopg.Connection[Any], outcome: JobOutcome, at: int) -> None:
    """Record a job's outcome; with an ``owner``, only while it holds the job and every memory in ``requires``
    exists (else ``JobFencedError``, inside the caller's transaction, which then rolls back).
    """
    if outcome.owner is not None:
        row = run(
            c, "SELECT user_id, state, lease_owner FROM jobs WHERE id = %s FOR UPDATE", (outcome.job_id,)
        ).fetchone()
        if row is None:
            raise JobFencedError(f"job {outcome.job_id} was cancelled (its user's memories were deleted)")
        if row[1] != JobState.RUNNING.value or row[2] != outcome.owner:
            raise JobFencedError(f"job {outcome.job_id} is no longer held by this process (its lease lapsed)")
        wanted = sorted(set(outcome.requires))
        if wanted:
            # FOR SHARE: a delete of one of them waits for this transaction (and is then seen by the job's next try).
            found = run(
                c, "SELECT id FROM memories WHERE user_id = %s AND id = ANY(%s) FOR SHARE", (row[0], wanted)
            ).fetchall()
            if len(found) != len(wanted):
                raise JobFencedError(f"job {outcome.job_id} read memories that were deleted while it ran")
    run(
        c,
        "UPDATE jobs SET state = %s, error = %s, updated_at = %s, lease_owner = NULL, lease_until = NULL WHERE id = %s",
        (outcome.state.value, outcome.error, at, outcome.job_id),
    )
    if outcome.payload is not None:
        run(
            c,
            "UPDATE jobs SET payload = %s WHERE id = %s",
            (json.dumps(outcome.payload, ensure_ascii=False), outcome.job_id),
        )


def claim(c: psycopg.Connection[Any], at: int, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
    """The oldest job that is queued, or running under a lapsed lease or a dead owner, now running under
    ``claim`` with one more attempt; ``None`` when there is none.
    """
    owners = run(
        c,
        "SELECT DISTINCT lease_owner FROM jobs WHERE state = 'running' AND lease_owner IS NOT NULL "
        "AND lease_until >= %s",
        (at,),
    ).fetchall()
    dead = [str(r[0]) for r in owners if is_dead(str(r[0]))]
    row = run(
        c,
        f"{_SELECT} WHERE (state = 'queued' OR (state = 'running' AND (lease_until IS NULL OR lease_until < %s "
        "OR lease_owner = ANY(%s)))) AND (not_before IS NULL OR not_before <= %s) "
        "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED",
        (at, dead, at),
    ).fetchone()
    if row is None:
        return None
    return _take(c, row, at, claim)


def claim_id(
    c: psycopg.Connection[Any], job_id: str, at: int, claim: JobClaim, is_dead: Callable[[str], bool]
) -> Job | None:
    """The job ``job_id``, now running under ``claim`` with one more attempt, if it is queued (whatever its
    ``not_before``: this is the delivery it was held back for) or running under a lapsed lease or a dead owner;
    ``None`` when it is done, failed, held by a live owner, or gone.
    """
    found = run(c, f"{_COLUMNS}, lease_owner, lease_until FROM jobs WHERE id = %s FOR UPDATE", (job_id,)).fetchone()
    if found is None:
        return None
    state, owner, until = found[4], found[10], found[11]
    if state == JobState.QUEUED.value:
        return _take(c, found[:10], at, claim)
    if state != JobState.RUNNING.value:
        return None
    if owner is None or until is None or int(until) < at or is_dead(str(owner)):
        return _take(c, found[:10], at, claim)
    return None


def _take(c: psycopg.Connection[Any], row: tuple[Any, ...], at: int, claim: JobClaim) -> Job:
    run(
        c,
        "UPDATE jobs SET state = %s, attempts = attempts + 1, updated_at = %s, lease_owner = %s, lease_until = %s "
        "WHERE id = %s",
        (JobState.RUNNING.value, at, claim.owner, claim.until, row[0]),
    )
    job = _job(row)
    return job.model_copy(
        update={"state": JobState.RUNNING, "attempts": job.attempts + 1, "updated_at": from_micros(at)}
    )


def retry_later(c: psycopg.Connection[Any], job_id: str, owner: str, error: str, not_before: int, at: int) -> bool:
    """Put a job back in the queue after a failed attempt (counted), held back until ``not_before``; it must be
    running under ``owner``'s lease or have just been recorded failed by its handler (else ``False``).
    """
    cur = run(
        c,
        "UPDATE jobs SET state = 'queued', error = %s, updated_at = %s, lease_owner = NULL, lease_until = NULL, "
        "not_before = %s WHERE id = %s AND ((state = 'running' AND lease_owner = %s) OR (state = 'failed' "
        "AND lease_owner IS NULL))",
        (error, at, not_before, job_id, owner),
    )
    return cur.rowcount > 0


def unhold(c: psycopg.Connection[Any], job_id: str) -> bool:
    """Let the queue scan take a queued job at once (its broker could not be reached)."""
    cur = run(c, "UPDATE jobs SET not_before = NULL WHERE id = %s AND state = 'queued'", (job_id,))
    return cur.rowcount > 0


def renew(c: psycopg.Connection[Any], job_id: str, claim: JobClaim) -> bool:
    """Extend a job's lease; ``False`` when this owner no longer holds it."""
    cur = run(
        c,
        "UPDATE jobs SET lease_until = %s WHERE id = %s AND state = 'running' AND lease_owner = %s",
        (claim.until, job_id, claim.owner),
    )
    return cur.rowcount > 0


def release(c: psycopg.Connection[Any], job_id: str, owner: str, at: int) -> bool:
    """Put a job this owner holds back in the queue, its attempt not counted (it was deferred, not tried)."""
    cur = run(
        c,
        "UPDATE jobs SET state = 'queued', attempts = greatest(attempts - 1, 0), updated_at = %s, lease_owner = NULL, "
        "lease_until = NULL WHERE id = %s AND state = 'running' AND lease_owner = %s",
        (at, job_id, owner),
    )
    return cur.rowcount > 0


def acquire_lock(
    c: psycopg.Connection[Any], name: str, claim: JobClaim, at: int, is_dead: Callable[[str], bool]
) -> bool:
    """Take (or, for its holder, extend) the named lock; ``False`` while another live owner holds it."""
    taken = run(
        c,
        "INSERT INTO locks (name, owner, until) VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING",
        (name, claim.owner, claim.until),
    )
    if taken.rowcount > 0:
        return True
    row = run(c, "SELECT owner, until FROM locks WHERE name = %s FOR UPDATE", (name,)).fetchone()
    if row is not None and row[0] != claim.owner and int(row[1]) >= at and not is_dead(str(row[0])):
        return False
    run(
        c,
        "INSERT INTO locks (name, owner, until) VALUES (%s, %s, %s) "
        "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until",
        (name, claim.owner, claim.until),
    )
    return True


def release_lock(c: psycopg.Connection[Any], name: str, owner: str) -> None:
    """Let go of the named lock if this owner holds it."""
    run(c, "DELETE FROM locks WHERE name = %s AND owner = %s", (name, owner))


def get(c: psycopg.Connection[Any], user_id: str, job_id: str) -> Job | None:
    """One job of this user."""
    row = run(c, f"{_SELECT} WHERE user_id = %s AND id = %s", (user_id, job_id)).fetchone()
    return None if row is None else _job(row)


def find(c: psycopg.Connection[Any], job_id: str) -> Job | None:
    """A job by its id alone, whoever's it is (callers check its scope)."""
    row = run(c, f"{_SELECT} WHERE id = %s", (job_id,)).fetchone()
    return None if row is None else _job(row)


def select(c: psycopg.Connection[Any], user_id: str | None, state: JobState | None, limit: int) -> list[Job]:
    """Jobs (of one user, or all), oldest first, optionally in one state."""
    parts: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        parts.append("user_id = %s")
        params.append(user_id)
    if state is not None:
        parts.append("state = %s")
        params.append(state.value)
    where = f" WHERE {' AND '.join(parts)}" if parts else ""
    return [_job(r) for r in run(c, f"{_SELECT}{where} ORDER BY seq LIMIT %s", (*params, limit)).fetchall()]


def pending(c: psycopg.Connection[Any]) -> int:
    """How many jobs are queued or running."""
    row = run(c, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()
    return int(row[0]) if row else 0


def requeue(c: psycopg.Connection[Any], states: tuple[JobState, ...], user_id: str | None, at: int) -> int:
    """Put jobs in ``states`` back in the queue (on request: failed ones); their leases are cleared. A failed job
    starts a fresh round of attempts: a dead letter's count would dead-letter it again at its first claim.
    """
    scope, params = ("AND user_id = %s ", [user_id]) if user_id is not None else ("", [])
    cur = run(
        c,
        "UPDATE jobs SET state = 'queued', updated_at = %s, lease_owner = NULL, lease_until = NULL, not_before = NULL, "
        f"attempts = CASE WHEN state = 'failed' THEN 0 ELSE attempts END WHERE state = ANY(%s) {scope}",
        (at, [s.value for s in states], *params),
    )
    return int(cur.rowcount)
