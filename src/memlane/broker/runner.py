"""Running the one job a broker's message names: the job table decides whether it runs, retries or is dead.

A delivery claims its job by id under a lease. A job that is done, failed, held by a live process or gone is
skipped, so a message delivered twice (a redelivery after a worker died, a duplicate publish) never does the work
twice. A failed attempt is queued again with exponential backoff until ``max_attempts``; then the job stays
``failed`` with its last error: the dead letter, which ``Memory.retry_jobs`` queues again.
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from memlane.config import Config
from memlane.errors import MemlaneError, NotFoundError
from memlane.lifecycle.locks import Leases
from memlane.models import Job, JobState, utcnow
from memlane.store.base import JobQueue
from memlane.store.outcome import JobFencedError, JobOutcome
from memlane.worker import JobDeferred

log = logging.getLogger(__name__)


class RunStatus(enum.StrEnum):
    """How one delivery of a job ended."""

    DONE = "done"  # the job ran and its results are stored
    RETRY = "retry"  # the attempt failed; the job is queued again, to be delivered after ``retry_in`` seconds
    DEAD = "dead"  # the last allowed attempt failed: the job stays failed (the dead letter)
    SKIPPED = "skipped"  # nothing to do: done, failed, running in a live process, or gone
    DEFERRED = "deferred"  # this process may not run it (another embedder): back in the queue, attempt not counted
    FENCED = "fenced"  # its write was refused (a source deleted meanwhile, or its lease lost): nothing was stored


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``max_attempts`` attempts; the n-th retry waits ``backoff * 2**(n-1)`` seconds, at most
    ``backoff_max``; a job handed to the broker is left to it for ``handoff`` seconds before any process may
    take it from the queue.
    """

    max_attempts: int = 5
    backoff: float = 2.0
    backoff_max: float = 300.0
    handoff: float = 600.0

    @classmethod
    def from_config(cls, config: Config) -> RetryPolicy:
        return cls(
            max_attempts=config.job_max_attempts,
            backoff=config.job_backoff_seconds,
            backoff_max=config.job_backoff_max_seconds,
            handoff=config.broker_handoff_seconds,
        )

    def delay(self, attempts: int) -> float:
        """Seconds to wait before the attempt after ``attempts`` failed ones."""
        return float(min(self.backoff_max, self.backoff * 2 ** max(attempts - 1, 0)))


@dataclass(frozen=True)
class JobRun:
    """What one delivery did with its job."""

    job_id: str
    status: RunStatus
    attempts: int = 0
    retry_in: float | None = None
    error: str | None = None


def run_job(
    store: JobQueue, leases: Leases, handler: Callable[[Job], None], job_id: str, policy: RetryPolicy
) -> JobRun:
    """Claim job ``job_id`` and run ``handler`` on it, if the job table says it is this delivery's to run."""
    job = leases.claim_job_id(job_id)
    if job is None:
        return JobRun(job_id, RunStatus.SKIPPED)
    owner = leases.owner
    try:
        if job.attempts > policy.max_attempts:  # earlier attempts died mid-run (each claim counts one)
            error = f"dead letter: {policy.max_attempts} attempts did not finish; last error: {job.error}"
            store.finish_job(JobOutcome(job.id, JobState.FAILED, error[:2000], owner=owner))
            return JobRun(job.id, RunStatus.DEAD, job.attempts, error=error)
        try:
            handler(job)
        except JobDeferred as why:
            store.release_job(job.id, owner)
            return JobRun(job.id, RunStatus.DEFERRED, job.attempts - 1, error=str(why))
        except JobFencedError as why:
            log.info("job %s was fenced: %s", job.id, why)
            store.release_job(job.id, owner)
            return JobRun(job.id, RunStatus.FENCED, job.attempts, error=str(why))
        except Exception as exc:
            if isinstance(exc, MemlaneError):
                log.warning("job %s attempt %d failed: %s: %s", job.id, job.attempts, type(exc).__name__, exc)
            else:
                log.exception("job %s attempt %d failed", job.id, job.attempts)
            return _failed(store, job, owner, f"{type(exc).__name__}: {exc}", policy, held=True)
        try:
            after = store.job(job.user_id, job.id)
        except NotFoundError:  # its user was deleted meanwhile
            return JobRun(job.id, RunStatus.SKIPPED, job.attempts)
        if after.state is JobState.FAILED:  # the handler recorded a failure (an extraction batch it could not read)
            return _failed(store, after, owner, after.error or "failed", policy, held=False)
        return JobRun(job.id, RunStatus.DONE, job.attempts)
    finally:
        leases.drop(job.id)


def _failed(store: JobQueue, job: Job, owner: str, error: str, policy: RetryPolicy, *, held: bool) -> JobRun:
    """Queue a failed attempt again after its backoff, or leave the job failed once it has had every attempt."""
    error = error[:2000]
    if job.attempts < policy.max_attempts:
        delay = policy.delay(job.attempts)
        not_before = utcnow() + timedelta(seconds=delay + policy.handoff)
        if store.retry_job_later(job.id, owner, error, not_before):
            return JobRun(job.id, RunStatus.RETRY, job.attempts, retry_in=delay, error=error)
        return JobRun(job.id, RunStatus.SKIPPED, job.attempts, error=error)
    dead = f"dead letter after {job.attempts} attempts: {error}"[:2000]
    with contextlib.suppress(JobFencedError):
        store.finish_job(JobOutcome(job.id, JobState.FAILED, dead, owner=owner if held else None))
    log.warning("job %s is dead after %d attempts: %s", job.id, job.attempts, error)
    return JobRun(job.id, RunStatus.DEAD, job.attempts, error=dead)
