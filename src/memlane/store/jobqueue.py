"""The job queue capability, once for every backend: each method is one transaction (or one read) over the job
table's SQL (``memlane.store.sql.jobs``), which each backend runs in its own dialect.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from memlane.errors import NotFoundError
from memlane.models import Job, JobState, utcnow
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.sql.rows import to_micros


class JobTableSQL(Protocol):
    """The job table's statements in one backend's dialect (``memlane.store.sql.jobs.JobTable``)."""

    def enqueue(self, c: Any, job: Job, claim: JobClaim | None = None) -> None: ...
    def claim(self, c: Any, at: int, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None: ...
    def claim_id(self, c: Any, job_id: str, at: int, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None: ...
    def retry_later(self, c: Any, job_id: str, owner: str, error: str, not_before: int, at: int) -> bool: ...
    def unhold(self, c: Any, job_id: str) -> bool: ...
    def renew(self, c: Any, job_id: str, claim: JobClaim) -> bool: ...
    def release(self, c: Any, job_id: str, owner: str, at: int) -> bool: ...
    def acquire_lock(self, c: Any, name: str, claim: JobClaim, at: int, is_dead: Callable[[str], bool]) -> bool: ...
    def release_lock(self, c: Any, name: str, owner: str) -> None: ...
    def finish(self, c: Any, outcome: JobOutcome, at: int) -> None: ...
    def get(self, c: Any, user_id: str, job_id: str) -> Job | None: ...
    def find(self, c: Any, job_id: str) -> Job | None: ...
    def select(self, c: Any, user_id: str | None, state: JobState | None, limit: int) -> list[Job]: ...
    def pending(self, c: Any) -> int: ...
    def requeue(self, c: Any, states: tuple[JobState, ...], user_id: str | None, at: int) -> int: ...


class QueueDatabase(Protocol):
    """What the queue needs of a backend's database: transactions, and reads confined to one user's rows."""

    def atomic(self) -> AbstractContextManager[Any]: ...
    def reading(self, scope: str | None = None) -> AbstractContextManager[Any]: ...


D = TypeVar("D", bound=QueueDatabase)


class SQLJobQueue(Generic[D]):
    """Durable jobs in the same database as the memories they read (mixed into a backend's store)."""

    _db: D
    _jobs_sql: JobTableSQL

    def enqueue(self, job: Job) -> None:
        """Add a job to the durable queue."""
        with self._db.atomic() as c:
            self._jobs_sql.enqueue(c, job)

    def claim_job(self, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The oldest queued job (or one whose lease lapsed or whose owner ``is_dead``), now running under
        ``claim`` (its attempt counted); ``None`` when there is none.
        """
        with self._db.atomic() as c:
            return self._jobs_sql.claim(c, to_micros(utcnow()), claim, is_dead)

    def claim_job_id(self, job_id: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """Job ``job_id`` now running under ``claim``, if it is queued or abandoned; else ``None``."""
        with self._db.atomic() as c:
            return self._jobs_sql.claim_id(c, job_id, to_micros(utcnow()), claim, is_dead)

    def retry_job_later(self, job_id: str, owner: str, error: str, not_before: datetime) -> bool:
        with self._db.atomic() as c:
            return self._jobs_sql.retry_later(c, job_id, owner, error, to_micros(not_before), to_micros(utcnow()))

    def unhold_job(self, job_id: str) -> bool:
        with self._db.atomic() as c:
            return self._jobs_sql.unhold(c, job_id)

    def renew_job(self, job_id: str, claim: JobClaim) -> bool:
        with self._db.atomic() as c:
            return self._jobs_sql.renew(c, job_id, claim)

    def release_job(self, job_id: str, owner: str) -> bool:
        with self._db.atomic() as c:
            return self._jobs_sql.release(c, job_id, owner, to_micros(utcnow()))

    def acquire_lock(self, name: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> bool:
        with self._db.atomic() as c:
            return self._jobs_sql.acquire_lock(c, name, claim, to_micros(utcnow()), is_dead)

    def release_lock(self, name: str, owner: str) -> None:
        with self._db.atomic() as c:
            self._jobs_sql.release_lock(c, name, owner)

    def finish_job(self, outcome: JobOutcome) -> None:
        with self._db.atomic() as c:
            self._jobs_sql.finish(c, outcome, to_micros(utcnow()))

    def job(self, user_id: str, job_id: str) -> Job:
        with self._db.reading(user_id) as c:
            found = self._jobs_sql.get(c, user_id, job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id!r} for user {user_id!r}")
        return found

    def find_job(self, job_id: str) -> Job | None:
        with self._db.reading() as c:
            return self._jobs_sql.find(c, job_id)

    def jobs(self, user_id: str | None, state: JobState | None = None, limit: int = 1000) -> builtins.list[Job]:
        with self._db.reading() as c:
            return self._jobs_sql.select(c, user_id, state, limit)

    def pending_jobs(self) -> int:
        with self._db.reading() as c:
            return self._jobs_sql.pending(c)

    def requeue_jobs(self, states: tuple[JobState, ...], user_id: str | None = None) -> int:
        with self._db.atomic() as c:
            return self._jobs_sql.requeue(c, states, user_id, to_micros(utcnow()))
