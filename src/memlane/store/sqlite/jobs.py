"""The durable job table and the lease locks of the SQLite store: SQL over a connection the caller holds inside a
transaction.

A job is claimed with a lease (owner and expiry), renewed while it runs: a live job is never claimed again, and a
job whose owner died is claimed again once its lease lapses (or at once when ``is_dead`` says its owner is gone).
Its outcome is written only while its owner still holds it (``finish`` fences everything else).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, Final

from memlane.models import Job, JobState
from memlane.store.outcome import JobClaim, JobFencedError, JobOutcome
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


def enqueue(c: sqlite3.Connection, job: Job, claim: JobClaim | None = None) -> None:
    """Insert a job as given (normally queued; a running job is inserted under ``claim``, already leased)."""
    running = job.state is JobState.RUNNING
    if running and claim is None:
        raise ValueError("a job inserted as running needs the claim that holds it")
    held = claim if running else None
    c.execute(
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


def finish(c: sqlite3.Connection, outcome: JobOutcome, at: int) -> None:
    """Record a job's outcome (done, or failed with its error), and its narrowed payload when given.

    With an ``owner`` the job must still be running under that owner's lease, and every memory in ``requires``
    must still exist; otherwise ``JobFencedError`` is raised (inside the caller's transaction, which then rolls
    back whatever it wrote with the outcome).
    """
    if outcome.owner is not None:
        row = c.execute("SELECT user_id, state, lease_owner FROM jobs WHERE id = ?", (outcome.job_id,)).fetchone()
        if row is None:
            raise JobFencedError(f"job {outcome.job_id} was cancelled (its user's memories were deleted)")
        if row[1] != JobState.RUNNING.value or row[2] != outcome.owner:
            raise JobFencedError(f"job {outcome.job_id} is no longer held by this process (its lease lapsed)")
        wanted = sorted(set(outcome.requires))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            found = c.execute(
                f"SELECT count(*) FROM memories WHERE +user_id = ? AND id IN ({marks})", (row[0], *chunk)
            ).fetchone()[0]
            if int(found) != len(chunk):
                raise JobFencedError(f"job {outcome.job_id} read memories that were deleted while it ran")
    c.execute(
        "UPDATE jobs SET state = ?, error = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ?",
        (outcome.state.value, outcome.error, at, outcome.job_id),
    )
    if outcome.payload is not None:
        c.execute(
            "UPDATE jobs SET payload = ? WHERE id = ?",
            (json.dumps(outcome.payload, ensure_ascii=False), outcome.job_id),
        )


def claim(c: sqlite3.Connection, at: int, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
    """The oldest job that is queued, or running under a lapsed lease or a dead owner, now running under
    ``claim`` with one more attempt; ``None`` when there is none. A job held back (``not_before`` still ahead:
    handed to a broker, or waiting out a retry's backoff) is left alone.
    """
    dead = [
        str(r[0])
        for r in c.execute(
            "SELECT DISTINCT lease_owner FROM jobs WHERE state = 'running' AND lease_owner IS NOT NULL "
            "AND lease_until >= ?",
            (at,),
        )
        if is_dead(str(r[0]))
    ]
    marks = ", ".join("?" * len(dead))
    orphan = f" OR lease_owner IN ({marks})" if dead else ""
    row = c.execute(
        f"{_SELECT} WHERE (state = 'queued' OR (state = 'running' AND (lease_until IS NULL OR lease_until < ?{orphan}))) "
        "AND (not_before IS NULL OR not_before <= ?) ORDER BY seq LIMIT 1",
        (at, *dead, at),
    ).fetchone()
    if row is None:
        return None
    return _take(c, row, at, claim)


def claim_id(
    c: sqlite3.Connection, job_id: str, at: int, claim: JobClaim, is_dead: Callable[[str], bool]
) -> Job | None:
    """The job ``job_id``, now running under ``claim`` with one more attempt, if it is queued (whatever its
    ``not_before``: this is the delivery it was held back for) or running under a lapsed lease or a dead owner;
    ``None`` when it is done, failed, held by a live owner, or gone.
    """
    found = c.execute(f"{_COLUMNS}, lease_owner, lease_until FROM jobs WHERE id = ?", (job_id,)).fetchone()
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


def _take(c: sqlite3.Connection, row: tuple[Any, ...], at: int, claim: JobClaim) -> Job:
    c.execute(
        "UPDATE jobs SET state = ?, attempts = attempts + 1, updated_at = ?, lease_owner = ?, lease_until = ? "
        "WHERE id = ?",
        (JobState.RUNNING.value, at, claim.owner, claim.until, row[0]),
    )
    job = _job(row)
    return job.model_copy(
        update={"state": JobState.RUNNING, "attempts": job.attempts + 1, "updated_at": from_micros(at)}
    )


def renew(c: sqlite3.Connection, job_id: str, claim: JobClaim) -> bool:
    """Extend a job's lease; ``False`` when this owner no longer holds it."""
    cur = c.execute(
        "UPDATE jobs SET lease_until = ? WHERE id = ? AND state = 'running' AND lease_owner = ?",
        (claim.until, job_id, claim.owner),
    )
    return cur.rowcount > 0


def retry_later(c: sqlite3.Connection, job_id: str, owner: str, error: str, not_before: int, at: int) -> bool:
    """Put a job back in the queue after a failed attempt (counted), held back until ``not_before``.

    The job must be running under ``owner``'s lease, or have just been recorded failed (by its own handler,
    which then let go of it); ``False`` otherwise (cancelled, or taken over meanwhile).
    """
    cur = c.execute(
        "UPDATE jobs SET state = 'queued', error = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL, "
        "not_before = ? WHERE id = ? AND ((state = 'running' AND lease_owner = ?) OR (state = 'failed' "
        "AND lease_owner IS NULL))",
        (error, at, not_before, job_id, owner),
    )
    return cur.rowcount > 0


def unhold(c: sqlite3.Connection, job_id: str) -> bool:
    """Let the queue scan take a queued job at once (its broker could not be reached)."""
    cur = c.execute("UPDATE jobs SET not_before = NULL WHERE id = ? AND state = 'queued'", (job_id,))
    return cur.rowcount > 0


def release(c: sqlite3.Connection, job_id: str, owner: str, at: int) -> bool:
    """Put a job this owner holds back in the queue, its attempt not counted (it was deferred, not tried)."""
    cur = c.execute(
        "UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0), updated_at = ?, lease_owner = NULL, "
        "lease_until = NULL WHERE id = ? AND state = 'running' AND lease_owner = ?",
        (at, job_id, owner),
    )
    return cur.rowcount > 0


def acquire_lock(c: sqlite3.Connection, name: str, claim: JobClaim, at: int, is_dead: Callable[[str], bool]) -> bool:
    """Take (or, for its holder, extend) the named lock; ``False`` while another live owner holds it."""
    row = c.execute("SELECT owner, until FROM locks WHERE name = ?", (name,)).fetchone()
    if row is not None and row[0] != claim.owner and int(row[1]) >= at and not is_dead(str(row[0])):
        return False
    c.execute(
        "INSERT INTO locks (name, owner, until) VALUES (?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, until = excluded.until",
        (name, claim.owner, claim.until),
    )
    return True


def release_lock(c: sqlite3.Connection, name: str, owner: str) -> None:
    """Let go of the named lock if this owner holds it."""
    c.execute("DELETE FROM locks WHERE name = ? AND owner = ?", (name, owner))


def get(c: sqlite3.Connection, user_id: str, job_id: str) -> Job | None:
    """One job of this user."""
    row = c.execute(f"{_SELECT} WHERE user_id = ? AND id = ?", (user_id, job_id)).fetchone()
    return None if row is None else _job(row)


def find(c: sqlite3.Connection, job_id: str) -> Job | None:
    """A job by its id alone, whoever's it is (callers check its scope)."""
    row = c.execute(f"{_SELECT} WHERE id = ?", (job_id,)).fetchone()
    return None if row is None else _job(row)


def select(c: sqlite3.Connection, user_id: str | None, state: JobState | None, limit: int) -> list[Job]:
    """Jobs (of one user, or all), oldest first, optionally in one state."""
    parts, params = [], []
    if user_id is not None:
        parts.append("user_id = ?")
        params.append(user_id)
    if state is not None:
        parts.append("state = ?")
        params.append(state.value)
    where = f" WHERE {' AND '.join(parts)}" if parts else ""
    return [_job(r) for r in c.execute(f"{_SELECT}{where} ORDER BY seq LIMIT ?", (*params, limit))]


def pending(c: sqlite3.Connection) -> int:
    """How many jobs are queued or running."""
    row = c.execute("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()
    return int(row[0])


def requeue(c: sqlite3.Connection, states: tuple[JobState, ...], user_id: str | None, at: int) -> int:
    """Put jobs in ``states`` back in the queue (on request: failed ones); their leases are cleared. A failed job
    starts a fresh round of attempts: a dead letter's count would dead-letter it again at its first claim.
    """
    marks = ", ".join("?" * len(states))
    scope, params = ("AND user_id = ? ", [user_id]) if user_id is not None else ("", [])
    cur = c.execute(
        f"UPDATE jobs SET state = 'queued', updated_at = ?, lease_owner = NULL, lease_until = NULL, not_before = NULL, "
        f"attempts = CASE WHEN state = 'failed' THEN 0 ELSE attempts END WHERE state IN ({marks}) {scope}",
        (at, *[s.value for s in states], *params),
    )
    return int(cur.rowcount)
