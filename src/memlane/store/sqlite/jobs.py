"""The durable job table of the SQLite store: SQL over a connection the caller holds inside a transaction."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Final

from memlane.models import Job, JobState
from memlane.store.outcome import JobOutcome
from memlane.store.sqlite.rows import from_micros, to_micros

_SELECT: Final = "SELECT id, user_id, kind, payload, state, attempts, error, created_at, updated_at FROM jobs"


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
    )


def enqueue(c: sqlite3.Connection, job: Job) -> None:
    """Insert a job as given (normally queued)."""
    c.execute(
        "INSERT INTO jobs (id, user_id, kind, payload, state, attempts, error, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        ),
    )


def finish(c: sqlite3.Connection, outcome: JobOutcome, at: int) -> None:
    """Record a job's outcome (done, or failed with its error), and its narrowed payload when given."""
    c.execute(
        "UPDATE jobs SET state = ?, error = ?, updated_at = ? WHERE id = ?",
        (outcome.state.value, outcome.error, at, outcome.job_id),
    )
    if outcome.payload is not None:
        c.execute(
            "UPDATE jobs SET payload = ? WHERE id = ?",
            (json.dumps(outcome.payload, ensure_ascii=False), outcome.job_id),
        )


def claim(c: sqlite3.Connection, at: int) -> Job | None:
    """The oldest queued job, marked running with one more attempt; ``None`` when the queue is empty."""
    row = c.execute(f"{_SELECT} WHERE state = ? ORDER BY seq LIMIT 1", (JobState.QUEUED.value,)).fetchone()
    if row is None:
        return None
    c.execute(
        "UPDATE jobs SET state = ?, attempts = attempts + 1, updated_at = ? WHERE id = ?",
        (JobState.RUNNING.value, at, row[0]),
    )
    job = _job(row)
    return job.model_copy(
        update={"state": JobState.RUNNING, "attempts": job.attempts + 1, "updated_at": from_micros(at)}
    )


def get(c: sqlite3.Connection, user_id: str, job_id: str) -> Job | None:
    """One job of this user."""
    row = c.execute(f"{_SELECT} WHERE user_id = ? AND id = ?", (user_id, job_id)).fetchone()
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
    """Put jobs in ``states`` back in the queue (after a crash: running ones; on request: failed ones)."""
    marks = ", ".join("?" * len(states))
    scope, params = ("AND user_id = ? ", [user_id]) if user_id is not None else ("", [])
    cur = c.execute(
        f"UPDATE jobs SET state = 'queued', updated_at = ? WHERE state IN ({marks}) {scope}",
        (at, *[s.value for s in states], *params),
    )
    return int(cur.rowcount)
