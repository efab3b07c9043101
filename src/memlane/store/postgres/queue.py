"""The job queue capability over the job table's SQL (``jobs.py``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import datetime

import memlane.store.postgres.jobs as jobs_sql
from memlane.errors import NotFoundError
from memlane.models import Job, JobState, utcnow
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.postgres.db import Database
from memlane.store.sqlite.rows import to_micros


class PostgresJobQueue:
    """Durable jobs in the same database as the memories they read."""

    _db: Database

    def enqueue(self, job: Job) -> None:
        """Add a job to the durable queue."""
        with self._db.atomic() as c:
            jobs_sql.enqueue(c, job)

    def claim_job(self, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The oldest queued job (or one whose lease lapsed or whose owner ``is_dead``), now running under
        ``claim`` (its attempt counted); ``None`` when there is none.
        """
        with self._db.atomic() as c:
            return jobs_sql.claim(c, to_micros(utcnow()), claim, is_dead)

    def claim_job_id(self, job_id: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """Job ``job_id`` now running under ``claim``, if it is queued or abandoned; else ``None``."""
        with self._db.atomic() as c:
            return jobs_sql.claim_id(c, job_id, to_micros(utcnow()), claim, is_dead)

    def retry_job_later(self, job_id: str, owner: str, error: str, not_before: datetime) -> bool:
        with self._db.atomic() as c:
            return jobs_sql.retry_later(c, job_id, owner, error, to_micros(not_before), to_micros(utcnow()))

    def unhold_job(self, job_id: str) -> bool:
        with self._db.atomic() as c:
            return jobs_sql.unhold(c, job_id)

    def renew_job(self, job_id: str, claim: JobClaim) -> bool:
        with self._db.atomic() as c:
            return jobs_sql.renew(c, job_id, claim)

    def release_job(self, job_id: str, owner: str) -> bool:
        with self._db.atomic() as c:
            return jobs_sql.release(c, job_id, owner, to_micros(utcnow()))

    def acquire_lock(self, name: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> bool:
        with self._db.atomic() as c:
            return jobs_sql.acquire_lock(c, name, claim, to_micros(utcnow()), is_dead)

    def release_lock(self, name: str, owner: str) -> None:
        with self._db.atomic() as c:
            jobs_sql.release_lock(c, name, owner)

    def finish_job(self, outcome: JobOutcome) -> None:
        with self._db.atomic() as c:
            jobs_sql.finish(c, outcome, to_micros(utcnow()))

    def job(self, user_id: str, job_id: str) -> Job:
        with self._db.reading(user_id) as c:
            found = jobs_sql.get(c, user_id, job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id!r} for user {user_id!r}")
        return found

    def jobs(self, user_id: str | None, state: JobState | None = None, limit: int = 1000) -> builtins.list[Job]:
        with self._db.reading() as c:
            return jobs_sql.select(c, user_id, state, limit)

    def pending_jobs(self) -> int:
        with self._db.reading() as c:
            return jobs_sql.pending(c)

    def requeue_jobs(self, states: tuple[JobState, ...], user_id: str | None = None) -> int:
        with self._db.atomic() as c:
            return jobs_sql.requeue(c, states, user_id, to_micros(utcnow()))
