"""The Celery worker of one store: its task runs the job a message names (the job table decides), and at start it
publishes every job left pending, so none waits on a lost message.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memlane.broker.celery_app import TASK, Publisher, make_app
from memlane.broker.runner import RetryPolicy, RunStatus
from memlane.config import Config
from memlane.engine import Memory
from memlane.errors import ConfigError
from memlane.models import JobState, utcnow

try:
    from celery import Task
    from celery.signals import worker_ready
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from memlane.errors import MissingDependencyError

    raise MissingDependencyError("memlane worker --celery", "celery") from exc

log = logging.getLogger(__name__)


@dataclass
class WorkerRuntime:
    """What a worker process serves: one store, opened lazily in each pool process (after the fork)."""

    db: str | Path | None
    embedder: str | None
    config: Config
    _memory: Memory | None = field(default=None, init=False)
    _mu: threading.Lock = field(default_factory=threading.Lock, init=False)

    def memory(self) -> Memory:
        with self._mu:
            if self._memory is None:
                # No embedded worker thread here: this process runs what the broker delivers.
                config = self.config.with_(background_worker=False)
                self._memory = Memory(self.db, embedder=self.embedder, config=config)
            return self._memory


_runtime: WorkerRuntime | None = None
_stopping = threading.Event()
SWEEP_SECONDS: Final = 60.0


def _deliver(task: Task, location: str, job_id: str) -> dict[str, Any]:
    """The task: run the job the message names, if the job table says so; retry it after its backoff."""
    if _runtime is None:
        raise RuntimeError("this process was not started by `memlane worker --celery`")
    memory = _runtime.memory()
    if location != memory.location:
        log.error("message for store %s ignored: this worker serves %s", location, memory.location)
        return {"job_id": job_id, "status": "ignored"}
    policy = RetryPolicy.from_config(_runtime.config)
    run = memory.run_job(job_id, policy=policy)
    log.info("job %s: %s (attempt %d)", job_id, run.status.value, run.attempts)
    if run.status is RunStatus.RETRY:
        raise task.retry(countdown=run.retry_in)
    if run.status is RunStatus.FENCED:
        raise task.retry(countdown=policy.delay(1))
    if run.status is RunStatus.DEFERRED:
        raise task.retry(countdown=policy.backoff_max)
    return {"job_id": job_id, "status": run.status.value, "attempts": run.attempts}


def sweep(runtime: WorkerRuntime, *, everything: bool) -> int:
    """Publish the store's pending jobs, so none waits on a lost message; returns how many were published.

    At start (``everything``) every queued or running job goes out; later sweeps leave alone the queued jobs still
    held back (their message is in flight, or they wait out a retry's backoff). Extra deliveries are harmless: the
    job table skips what is done or running in a live process. A job in its backoff is delivered when it ends.
    """
    config = runtime.config.with_(background_worker=False)
    with Memory(runtime.db, embedder=runtime.embedder, config=config) as memory:
        publisher = Publisher(config, memory.location)
        try:
            now, sent = utcnow(), 0
            for job in memory.pending_jobs():
                held = job.not_before is not None and job.not_before > now
                if held and not everything and job.state is JobState.QUEUED:
                    continue
                wait = 0.0
                if job.not_before is not None:
                    wait = max(0.0, (job.not_before - now).total_seconds() - config.broker_handoff_seconds)
                problem = publisher.publish(job.id, countdown=wait or None)
                if problem is not None:
                    log.warning("could not publish job %s: %s", job.id, problem)
                    break
                sent += 1
            return sent
        finally:
            publisher.close()


def _sweeping(**_: Any) -> None:
    """Once the worker is ready: sweep everything, then every ``SWEEP_SECONDS`` what a dead worker left behind
    (a job running in a process that died is delivered again at once, not after Redis' visibility timeout).
    """
    runtime = _runtime
    if runtime is None:
        return
    log.info("published %d pending job(s) at start", sweep(runtime, everything=True))

    def loop() -> None:
        while not _stopping.wait(SWEEP_SECONDS):
            try:
                sweep(runtime, everything=False)
            except Exception as exc:  # the store or broker failed: the next sweep tries again
                log.warning("job sweep failed: %s", exc)

    threading.Thread(target=loop, name="memlane-sweep", daemon=True).start()


def run_worker(runtime: WorkerRuntime, *, pool: str = "prefork", concurrency: int = 1, loglevel: str = "INFO") -> None:
    """Run a Celery worker for one store until it is stopped."""
    global _runtime
    _runtime = runtime
    if runtime.config.broker_url is None:
        raise ConfigError("a Celery worker needs a broker URL (--broker or MEMLANE_BROKER_URL)")
    app = make_app(runtime.config.broker_url, runtime.config.broker_queue)
    app.task(name=TASK, bind=True, max_retries=None)(_deliver)
    worker_ready.connect(_sweeping, weak=False)
    argv = ["worker", f"--pool={pool}", f"--concurrency={concurrency}", f"--loglevel={loglevel}"]
    argv += ["-Q", runtime.config.broker_queue, "--without-gossip", "--without-mingle", "--without-heartbeat"]
    try:
        app.worker_main(argv=argv)
    finally:
        _stopping.set()
