"""Leases that hold across processes: a process-unique owner, the heartbeat that renews what it holds (claimed
jobs and named locks), and the per-user consolidation lock.

Every ``Memory`` has its own owner id ``host:pid:token``. What it holds is renewed every quarter lease; a holder
that dies stops renewing, so its jobs and locks are taken over once the lease lapses, or at once when the holder
was a process on this host that no longer runs (a SIGKILL, a crash). A holder that is merely slow and loses its
lease is fenced by the store: its job's write is refused as a whole.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from memlane.errors import StoreError
from memlane.models import Job, JobState
from memlane.store.base import JobQueue
from memlane.store.outcome import JobClaim

log = logging.getLogger(__name__)

LEASE_SECONDS: Final = 60.0
LOCK_WAIT_SECONDS: Final = 600.0
_HOST: Final = socket.gethostname()


class LockTimeoutError(StoreError):
    """A lock stayed held by another live process for longer than the wait allowed."""


def new_owner() -> str:
    """A lease owner id unique to this holder: ``host:pid:token``."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def owner_is_dead(owner: str) -> bool:
    """Whether ``owner`` was a process on this host that no longer runs (reaped or a zombie).

    Owners on other hosts, in this process, or that cannot be checked count as alive: their leases must lapse.
    """
    host, sep, rest = owner.rpartition(":")
    host, sep2, pid_text = host.rpartition(":")
    if not (sep and sep2 and rest) or host != _HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's live process
        return False
    try:  # killed but not yet reaped by its parent
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class Leases:
    """The leases one ``Memory`` holds on a store: claimed jobs and named locks, renewed by a daemon thread."""

    def __init__(self, store: JobQueue, *, seconds: float = LEASE_SECONDS) -> None:
        if seconds <= 0:
            raise ValueError("a lease must last more than 0 seconds")
        self.owner = new_owner()
        self.seconds = seconds
        self._store = store
        self._mu = threading.Lock()
        self._jobs: set[str] = set()
        self._locks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self) -> JobClaim:
        """A lease for this owner that lapses ``seconds`` from now."""
        return JobClaim(self.owner, time.time_ns() // 1000 + int(self.seconds * 1_000_000))

    # -- jobs --------------------------------------------------------------------------------------
    def claim_job(self) -> Job | None:
        """Claim the oldest runnable job (queued, or abandoned by a dead or lapsed owner) and keep its lease."""
        job = self._store.claim_job(self.claim(), owner_is_dead)
        if job is not None:
            self.hold(job.id)
        return job

    def claim_job_id(self, job_id: str) -> Job | None:
        """Claim the job ``job_id`` if it is queued or abandoned (a broker's delivery) and keep its lease."""
        job = self._store.claim_job_id(job_id, self.claim(), owner_is_dead)
        if job is not None:
            self.hold(job.id)
        return job

    def hold(self, job_id: str) -> None:
        """Renew this job's lease until ``drop``."""
        with self._mu:
            self._jobs.add(job_id)
        self._start()

    def drop(self, job_id: str) -> None:
        with self._mu:
            self._jobs.discard(job_id)

    # -- locks -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, name: str, *, wait: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
        """Hold the named lock across processes (re-entrant for this owner; callers serialise their threads)."""
        with self._mu:
            depth = self._locks.get(name, 0)
            if depth:
                self._locks[name] = depth + 1
        if not depth:
            self._acquire(name, wait)
        try:
            yield
        finally:
            with self._mu:
                left = self._locks[name] - 1
                if left:
                    self._locks[name] = left
                else:
                    del self._locks[name]
            if not left:
                try:
                    self._store.release_lock(name, self.owner)
                except StoreError:  # the lease lapses on its own
                    log.warning("could not release lock %s; it lapses in %.0f s", name, self.seconds)

    def _acquire(self, name: str, wait: float) -> None:
        deadline = time.monotonic() + wait
        pause = 0.005
        while not self._store.acquire_lock(name, self.claim(), owner_is_dead):
            if time.monotonic() >= deadline:
                raise LockTimeoutError(f"lock {name!r} is still held by another process after {wait:.0f} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        with self._mu:
            self._locks[name] = 1
        self._start()

    # -- heartbeat ---------------------------------------------------------------------------------
    def _start(self) -> None:
        with self._mu:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._beat, name="memlane-leases", daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.seconds / 4):
            with self._mu:
                jobs, locks = list(self._jobs), list(self._locks)
            try:
                for job_id in jobs:
                    if not self._store.renew_job(job_id, self.claim()) and self._lost(job_id):
                        log.warning("lost the lease of job %s; its result will be discarded", job_id)
                for name in locks:
                    self._store.acquire_lock(name, self.claim(), owner_is_dead)
            except Exception as exc:  # the store is closing or failing: the next beat tries again
                log.warning("could not renew leases: %s", exc)

    def _lost(self, job_id: str) -> bool:
        """Whether a job whose renewal failed was taken from this process: not when it finished here meanwhile (it
        is done before ``drop``, so a beat between the two finds it no longer running).
        """
        with self._mu:
            if job_id not in self._jobs:
                return False
        job = self._store.find_job(job_id)
        return job is not None and job.state is JobState.RUNNING

    def close(self) -> None:
        """Stop renewing (what is still held lapses on its own)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)
