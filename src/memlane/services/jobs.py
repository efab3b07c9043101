"""Background jobs: running an extraction job, handing a queued one to the broker or the embedded worker, and the
job API (run one by id, list, wait, flush, retry).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from memlane.blas import blas_threads
from memlane.broker.runner import JobRun, RetryPolicy, run_job
from memlane.errors import ExtractionFailedError, JobTimeoutError, ValidationError
from memlane.lifecycle.distill import EXTRACT_JOB, Distiller
from memlane.lifecycle.job_result import job_result
from memlane.models import Job, JobResult, JobState
from memlane.scope import check_tenant, unscope, unscope_all
from memlane.security.validation import check_float, check_id, check_int
from memlane.services.core import Core
from memlane.services.scope import Scope
from memlane.store.base import JobQueue
from memlane.store.outcome import JobOutcome
from memlane.telemetry import timed
from memlane.worker import JobDeferred, JobWorker

if TYPE_CHECKING:
    from memlane.broker.celery_app import Publisher

log = logging.getLogger(__name__)


class JobHandler:
    """Runs one claimed job in this process: extraction under the user's consolidation lock."""

    def __init__(self, core: Core, store: JobQueue, distiller: Distiller) -> None:
        self.core = core
        self.store = store
        self.distiller = distiller

    @timed("extract_job")  # telemetry
    def __call__(self, job: Job) -> None:
        with blas_threads(self.core.config.blas_threads):  # extraction embeds and compares vectors
            owner = self.core.leases.owner
            if job.kind != EXTRACT_JOB:
                self.store.finish_job(
                    JobOutcome(job.id, JobState.FAILED, f"unknown job kind {job.kind!r}", owner=owner)
                )
                return
            if not self.core.embedder_ready():
                raise JobDeferred("the store was indexed with another embedder; the job waits for a process using it")
            ids = [str(i) for i in job.payload.get("message_ids", [])]
            with self.core.consolidating(job.user_id):
                outcome = self.distiller.run(job.user_id, ids, job=job, owner=owner, retried=True)
            if outcome.failure is not None:  # what was readable is stored; the runner retries the rest
                raise ExtractionFailedError(outcome.failure)


class Jobs:
    """The job API over the store's job table, the embedded worker and the broker (when one is configured)."""

    def __init__(
        self,
        core: Core,
        store: JobQueue,
        handler: Callable[[Job], None],
        worker: JobWorker,
        publisher: Publisher | None,
    ) -> None:
        self.core = core
        self.store = store
        self.handler = handler
        self.worker = worker
        self.publisher = publisher

    def hand_off(self, job: Job) -> tuple[str, str | None]:
        """Publish a queued job to the broker, or (none configured, or unreachable) wake the embedded worker."""
        if self.publisher is not None:
            problem = self.publisher.publish(job.id)
            if problem is None:
                return "celery", None
            self.store.unhold_job(job.id)
            log.warning("job %s left to the embedded worker: %s", job.id, problem)
            self.worker.notify()
            return "embedded", f"{problem}; the job runs on the embedded worker instead"
        self.worker.notify()
        return "embedded", None

    def run_job(self, job_id: str, *, policy: RetryPolicy | None = None) -> JobRun:
        """Run one queued or abandoned job by id (see ``Memory.run_job``): only if the job table says it is queued or
        abandoned, so a redelivered message never does the work twice; a failure is queued again with backoff, or
        dead-lettered after ``policy.max_attempts`` (default from the config).
        """
        job_id = check_id(job_id, what="job_id", max_chars=self.core.limits.id_chars)
        config = self.core.config
        return run_job(self.store, self.core.leases, self.handler, job_id, policy or RetryPolicy.from_config(config))

    def pending_jobs(self, *, limit: int = 10_000) -> list[Job]:
        """Every queued or running job of the store (all users), oldest first."""
        limit = check_int(limit, what="limit", low=0, high=self.core.limits.list_limit)
        queued = self.store.jobs(None, JobState.QUEUED, limit)
        return queued + self.store.jobs(None, JobState.RUNNING, max(0, limit - len(queued)))

    def job(self, scope: Scope, job_id: str) -> Job:
        """A background job of this user."""
        job_id = check_id(job_id, what="job_id", max_chars=self.core.limits.id_chars)
        return unscope(self.store.job(scope.key, job_id))

    def result(self, job_id: str, tenant: str | None) -> JobResult:
        """A job of ``tenant`` by its id alone and the typed memories it wrote (see ``Memory.job_result``)."""
        job_id = check_id(job_id, what="job_id", max_chars=self.core.limits.id_chars)
        return job_result(self.core.store, job_id, check_tenant(tenant))

    def jobs(self, scope: Scope, *, state: JobState | str | None, limit: int) -> list[Job]:
        """The background jobs of this user, oldest first, optionally in one state."""
        limit = check_int(limit, what="limit", low=0, high=self.core.limits.list_limit)
        try:
            wanted = None if state is None else JobState(state)
        except (ValueError, TypeError):
            raise ValidationError(f"unknown job state {state!r}; one of {[s.value for s in JobState]}") from None
        return unscope_all(self.store.jobs(scope.key, wanted, limit))

    def wait(self, scope: Scope, job_id: str, *, timeout: float | None) -> Job:
        """Block until a job is done or failed and return it; ``JobTimeoutError`` after ``timeout`` seconds."""
        job_id = check_id(job_id, what="job_id", max_chars=self.core.limits.id_chars)
        if timeout is not None:
            timeout = check_float(timeout, what="timeout", low=0.0, high=1e9)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if not self.worker.background:
                self.worker.run_pending()
            self.core.counts_first()
            found = self.job(scope, job_id)
            if found.state in (JobState.DONE, JobState.FAILED):
                return found
            self.core.check_embedder()  # a job this process may not run would never finish here
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeoutError(f"job {job_id} is still {found.state.value} after {timeout} s")
            self.worker.notify()
            time.sleep(0.02)

    def flush(self, *, timeout: float | None) -> None:
        """Block until no background job is queued or running; ``JobTimeoutError`` after ``timeout`` seconds."""
        self.core.write_access()  # the searches' counts first, so that what this reads or writes includes them
        if timeout is not None:
            timeout = check_float(timeout, what="timeout", low=0.0, high=1e9)
        if not self.worker.wait_idle(timeout):
            self.core.check_embedder()
            raise JobTimeoutError(f"background jobs still pending after {timeout} s")

    def retry_jobs(self, *, user_id: str | None, tenant: str | None) -> int:
        """Queue failed jobs (of one user, or all) again; returns how many."""
        key = None if user_id is None else self.core.bind(user_id, tenant).key
        n = self.store.requeue_jobs((JobState.FAILED,), key)
        if n:
            self.worker.notify()
        return n
