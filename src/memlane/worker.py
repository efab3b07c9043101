"""``JobWorker``: one in-process thread that drains the store's durable job table under leases."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memlane.errors import MemlaneError, NotFoundError
from memlane.lifecycle.locks import Leases
from memlane.models import Job, JobState
from memlane.retry import RetryPolicy, dead_on_claim, settle_failure
from memlane.store.base import JobQueue
from memlane.store.outcome import JobFencedError

log = logging.getLogger(__name__)

Handler = Callable[[Job], None]


class JobDeferred(MemlaneError):
    """Raised by a handler that cannot run a job in this process (say, another embedder is configured): the job
    goes back to the queue untouched, for a process that can.
    """


class JobWorker:
    """Claims runnable jobs oldest first and runs ``handler`` on each, on a daemon thread (or inline on request).

    A job is claimed with a lease that ``leases`` renews while it runs, so no other process runs it meanwhile;
    a job whose process died is claimed again once its lease lapses. The handler records the job's outcome
    itself (in the same transaction as its results, refused if the job was cancelled or its lease lost). A failed
    attempt (an exception that escapes the handler, or a failure it recorded) is queued again after the backoff of
    ``policy``, as a broker's delivery is (``memlane.retry``); after ``max_attempts`` the job stays failed with its
    last error, the dead letter. While ``ready`` is false nothing is claimed.
    """

    def __init__(
        self,
        store: JobQueue,
        handler: Handler,
        *,
        leases: Leases,
        ready: Callable[[], bool] = lambda: True,
        background: bool = True,
        poll: float = 1.0,
        policy: RetryPolicy | None = None,
    ) -> None:
        self._store = store
        self._handler = handler
        self._leases = leases
        self._ready = ready
        self._background = background
        self._poll = poll
        self._policy = policy or RetryPolicy()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = threading.Lock()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    @property
    def background(self) -> bool:
        return self._background

    def recover(self) -> int:
        """Start the thread if any job is pending (jobs of dead processes are claimed when their leases lapse).

        Returns how many jobs are queued or running.
        """
        n = self._store.pending_jobs()
        if n:
            self.notify()
        return n

    def notify(self) -> None:
        """Tell the worker there is work (starts the thread on first use, when running in the background)."""
        if not self._background or self._stop.is_set():
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="memlane-jobs", daemon=True)
                self._thread.start()
        self._wake.set()

    def run_pending(self) -> int:
        """Run runnable jobs in the calling thread until none is left; returns how many ran."""
        n = 0
        while not self._stop.is_set() and self._run_one():
            n += 1
        return n

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no job is queued or running (here or in another process); False on timeout, or at once
        when this process may not run the jobs left (``ready`` is false).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self.notify()
        while True:
            if not self._background:
                self.run_pending()
            if not self._store.pending_jobs():
                return True
            if not self._ready() or (deadline is not None and time.monotonic() >= deadline):
                return False
            time.sleep(0.02)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the job in hand; a job still running at ``timeout`` is claimed again once its lease lapses."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the job worker did not stop within %.0f s; its job resumes when its lease lapses", timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                ran = self._run_one()
            except Exception as exc:  # the store failed: back off and try again
                log.warning("job worker could not claim a job: %s", exc)
                ran = False
            if not ran:
                self._wake.wait(self._poll)
                self._wake.clear()

    def _run_one(self) -> bool:
        with self._busy:
            if self._stop.is_set() or not self._ready():
                return False
            job = self._leases.claim_job()
            if job is None:
                return False
            try:
                if dead_on_claim(self._store, job, self._leases.owner, self._policy) is not None:
                    return True
                self._handler(job)
            except JobDeferred as why:
                log.info("job %s deferred: %s", job.id, why)
                self._store.release_job(job.id, self._leases.owner)
                return False
            except JobFencedError as why:  # cancelled, lease lost, or a source deleted: nothing was written
                log.info("job %s was fenced: %s", job.id, why)
                self._store.release_job(job.id, self._leases.owner)
            except Exception as exc:
                # An expected failure (a MemlaneError: LLM down, embedder mismatch, ...) is one line; the
                # traceback is kept for debugging. Anything else is a bug and is logged whole.
                if isinstance(exc, MemlaneError):
                    log.warning("job %s attempt %d failed: %s: %s", job.id, job.attempts, type(exc).__name__, exc)
                    log.debug("job %s failure traceback", job.id, exc_info=True)
                else:
                    log.exception("job %s attempt %d failed", job.id, job.attempts)
                error = f"{type(exc).__name__}: {exc}"
                settle_failure(self._store, job, self._leases.owner, error, self._policy, held=True)
            else:
                self._settle_recorded_failure(job)
            finally:
                self._leases.drop(job.id)
            return True

    def _settle_recorded_failure(self, job: Job) -> None:
        """The handler may record its job failed itself (an extraction batch it could not read): retried alike."""
        try:
            after = self._store.job(job.user_id, job.id)
        except NotFoundError:  # its user was deleted meanwhile
            return
        if after.state is JobState.FAILED and not (after.error or "").startswith("dead letter"):
            settle_failure(self._store, after, self._leases.owner, after.error or "failed", self._policy, held=False)
