"""The retry policy of background jobs, shared by the embedded worker and a broker's deliveries: a failed attempt
is queued again with exponential backoff until ``max_attempts``; then the job stays ``failed`` with its last error
(the dead letter, which ``Memory.retry_jobs`` queues again).
"""

from __future__ import annotations

import contextlib
import enum
import logging
from dataclasses import dataclass
from datetime import timedelta

from memlane.config import Config
from memlane.models import Job, JobState, utcnow
from memlane.store.base import JobQueue
from memlane.store.outcome import JobFencedError, JobOutcome

log = logging.getLogger(__name__)


class RunStatus(enum.StrEnum):
    """How one run of a job ended."""

    DONE = "done"  # the job ran and its results are stored
    RETRY = "retry"  # the attempt failed; the job is queued again, to run after ``retry_in`` seconds
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
    """What one run (a delivery, or an embedded worker's claim) did with its job."""

    job_id: str
    status: RunStatus
    attempts: int = 0
    retry_in: float | None = None
    error: str | None = None


def dead_on_claim(store: JobQueue, job: Job, owner: str, policy: RetryPolicy) -> JobRun | None:
    """A claimed job whose earlier attempts died mid-run (each claim counts one) past ``max_attempts``: recorded
    failed, the dead letter; ``None`` when it may still run.
    """
    if job.attempts <= policy.max_attempts:
        return None
    error = f"dead letter: {policy.max_attempts} attempts did not finish; last error: {job.error}"
    with contextlib.suppress(JobFencedError):
        store.finish_job(JobOutcome(job.id, JobState.FAILED, error[:2000], owner=owner))
    return JobRun(job.id, RunStatus.DEAD, job.attempts, error=error)


def settle_failure(
    store: JobQueue, job: Job, owner: str, error: str, policy: RetryPolicy, *, held: bool, hold: float = 0.0
) -> JobRun:
    """Queue a failed attempt again after its backoff (plus ``hold`` seconds, the broker's handoff: it redelivers
    at the backoff, the queue scan of any process only after both), or leave the job failed once it has had every
    attempt. ``held``: the job is still running under ``owner``'s lease (not already recorded failed by its handler).
    """
    error = error[:2000]
    if job.attempts < policy.max_attempts:
        delay = policy.delay(job.attempts)
        not_before = utcnow() + timedelta(seconds=delay + hold)
        if store.retry_job_later(job.id, owner, error, not_before):
            log.info("job %s attempt %d failed; retrying in %.1f s", job.id, job.attempts, delay)
            return JobRun(job.id, RunStatus.RETRY, job.attempts, retry_in=delay, error=error)
        return JobRun(job.id, RunStatus.SKIPPED, job.attempts, error=error)
    dead = f"dead letter after {job.attempts} attempts: {error}"[:2000]
    with contextlib.suppress(JobFencedError):
        store.finish_job(JobOutcome(job.id, JobState.FAILED, dead, owner=owner if held else None))
    log.warning("job %s is dead after %d attempts: %s", job.id, job.attempts, error)
    return JobRun(job.id, RunStatus.DEAD, job.attempts, error=dead)
