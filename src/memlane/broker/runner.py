"""Running the one job a broker's message names: the job table decides whether it runs, retries or is dead.

A delivery claims its job by id under a lease. A job that is done, failed, held by a live process or gone is
skipped, so a message delivered twice (a redelivery after a worker died, a duplicate publish) never does the work
twice. A failed attempt is queued again with exponential backoff until ``max_attempts``; then the job stays
``failed`` with its last error: the dead letter, which ``Memory.retry_jobs`` queues again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memlane.errors import MemlaneError, NotFoundError
from memlane.lifecycle.locks import Leases
from memlane.models import Job, JobState
from memlane.retry import JobRun, RetryPolicy, RunStatus, dead_on_claim, settle_failure
from memlane.store.base import JobQueue
from memlane.store.outcome import JobFencedError
from memlane.worker import JobDeferred

log = logging.getLogger(__name__)

__all__ = ["JobRun", "RetryPolicy", "RunStatus", "run_job"]


def run_job(
    store: JobQueue, leases: Leases, handler: Callable[[Job], None], job_id: str, policy: RetryPolicy
) -> JobRun:
    """Claim job ``job_id`` and run ``handler`` on it, if the job table says it is this delivery's to run."""
    job = leases.claim_job_id(job_id)
    if job is None:
        return JobRun(job_id, RunStatus.SKIPPED)
    owner = leases.owner
    try:
        dead = dead_on_claim(store, job, owner, policy)
        if dead is not None:
            return dead
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
            return settle_failure(
                store, job, owner, f"{type(exc).__name__}: {exc}", policy, held=True, hold=policy.handoff
            )
        try:
            after = store.job(job.user_id, job.id)
        except NotFoundError:  # its user was deleted meanwhile
            return JobRun(job.id, RunStatus.SKIPPED, job.attempts)
        if after.state is JobState.FAILED:  # the handler recorded a failure (an extraction batch it could not read)
            return settle_failure(store, after, owner, after.error or "failed", policy, held=False, hold=policy.handoff)
        return JobRun(job.id, RunStatus.DONE, job.attempts)
    finally:
        leases.drop(job.id)
