"""``JobWorker``: one in-process thread that drains the store's durable job table."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memlane.models import Job, JobState
from memlane.store.base import JobQueue
from memlane.store.outcome import JobOutcome

log = logging.getLogger(__name__)

Handler = Callable[[Job], None]


class JobWorker:
    """Claims queued jobs oldest first and runs ``handler`` on each, on a daemon thread (or inline on request).

    The handler records the job's outcome itself (in the same transaction as its results); an exception that
    escapes it marks the job failed with the error, for a retry. Jobs left running by a crash are queued again
    by ``recover`` when a store is opened.
    """

    def __init__(self, store: JobQueue, handler: Handler, *, background: bool = True, poll: float = 1.0) -> None:
        self._store = store
        self._handler = handler
        self._background = background
        self._poll = poll
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = threading.Lock()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    @property
    def background(self) -> bool:
        return self._background

    def recover(self) -> int:
        """Queue again the jobs a crashed process left running; start the thread if anything is pending."""
        n = self._store.requeue_jobs((JobState.RUNNING,))
        if n:
            log.info("re-queued %d job(s) left running by an earlier process", n)
        if self._store.pending_jobs():
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
        """Run queued jobs in the calling thread until none is left; returns how many ran."""
        n = 0
        while not self._stop.is_set() and self._run_one():
            n += 1
        return n

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no job is queued or running (running them inline without a thread); False on timeout."""
        if not self._background:
            self.run_pending()
            return self._store.pending_jobs() == 0
        deadline = None if timeout is None else time.monotonic() + timeout
        self.notify()
        while self._store.pending_jobs():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the job in hand; a job still running at ``timeout`` is re-queued at the next open."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the job worker did not stop within %.0f s; its job resumes at the next open", timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                ran = self._run_one()
            except Exception:  # the store failed: back off and try again
                log.exception("job worker could not claim a job")
                ran = False
            if not ran:
                self._wake.wait(self._poll)
                self._wake.clear()

    def _run_one(self) -> bool:
        with self._busy:
            if self._stop.is_set():
                return False
            job = self._store.claim_job()
            if job is None:
                return False
            try:
                self._handler(job)
            except Exception as exc:
                log.exception("job %s failed", job.id)
                self._store.finish_job(JobOutcome(job.id, JobState.FAILED, f"{type(exc).__name__}: {exc}"))
            return True
