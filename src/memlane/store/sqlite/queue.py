"""The job queue capability over the job table's SQL (``jobs.py``)."""

from __future__ import annotations

import builtins

from memlane.errors import NotFoundError
from memlane.models import Job, JobState, utcnow
from memlane.store.outcome import JobOutcome
from memlane.store.sqlite import jobs as jobs_sql
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import to_micros


class SQLiteJobQueue:
    """Durable jobs in the same file as the memories they read."""

    _db: Database

    def enqueue(self, job: Job) -> None:
        """Add a job to the durable queue."""
        with self._db.atomic() as c:
            jobs_sql.enqueue(c, job)

    def claim_job(self) -> Job | None:
        """The oldest queued job, now marked running (its attempt counted); ``None`` when there is none."""
        with self._db.atomic() as c:
            return jobs_sql.claim(c, to_micros(utcnow()))

    def finish_job(self, outcome: JobOutcome) -> None:
        with self._db.atomic() as c:
            jobs_sql.finish(c, outcome, to_micros(utcnow()))

    def job(self, user_id: str, job_id: str) -> Job:
        with self._db.lock:
            found = jobs_sql.get(self._db.conn, user_id, job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id!r} for user {user_id!r}")
        return found

    def jobs(self, user_id: str | None, state: JobState | None = None, limit: int = 1000) -> builtins.list[Job]:
        with self._db.lock:
            return jobs_sql.select(self._db.conn, user_id, state, limit)

    def pending_jobs(self) -> int:
        with self._db.lock:
            return jobs_sql.pending(self._db.conn)

    def requeue_jobs(self, states: tuple[JobState, ...], user_id: str | None = None) -> int:
        with self._db.atomic() as c:
            return jobs_sql.requeue(c, states, user_id, to_micros(utcnow()))
