"""Celery over Redis as the delivery of durable jobs: the app's settings and the publisher ``add`` uses.

Celery only delivers: a message names a job of the job table, and ``Memory.run_job`` decides, under the job's
lease, whether this delivery runs it (``celery_worker.py``). So messages are acknowledged late and redelivered
after a worker dies, and a redelivered or duplicated message is a no-op. When the broker cannot be reached,
``add`` leaves the job to the embedded worker and says so.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from memlane.config import Config
from memlane.errors import MissingDependencyError
from memlane.models import Job, utcnow

try:
    from celery import Celery
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("background jobs on Celery (broker_url)", "celery") from exc

TASK: Final = "memlane.run_job"
CONNECT_TIMEOUT: Final = 2.0
RECHECK_SECONDS: Final = 15.0


def make_app(broker_url: str, queue: str) -> Celery:
    """A Celery app for memlane's jobs: late acknowledgement, redelivery when a worker is lost, one message at a
    time per worker process, no result backend (the job table holds the results).
    """
    app = Celery("memlane", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_default_queue=queue,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=CONNECT_TIMEOUT,
        broker_transport_options={"socket_connect_timeout": CONNECT_TIMEOUT, "socket_timeout": 10.0},
    )
    return app


class BrokerUnavailableError(Exception):
    """The broker refused or timed out a publish (internal: ``add`` turns it into a notice, never raises it)."""


@dataclass
class Publisher:
    """Hands jobs of one store to the broker; used by ``Memory.add(async_mode=True)``."""

    config: Config
    location: str
    _app: Celery | None = field(default=None, init=False)
    _down: tuple[float, str] | None = field(default=None, init=False)  # (retry after, why) since a failed publish
    _mu: threading.Lock = field(default_factory=threading.Lock, init=False)

    def hold(self, job: Job) -> Job:
        """The job as it is enqueued for the broker: held back from the queue scan for the handoff window."""
        until = utcnow() + timedelta(seconds=self.config.broker_handoff_seconds)
        return job.model_copy(update={"not_before": until})

    def publish(self, job_id: str, *, countdown: float | None = None) -> str | None:
        """Send the job's message; ``None`` on success, else why the broker could not take it.

        After a failure the broker is not tried again for ``RECHECK_SECONDS`` (a refused connection costs seconds
        of the client's own retries), so adds stay fast while it is down.
        """
        with self._mu:
            if self._down is not None and time.monotonic() < self._down[0]:
                return f"{self._down[1]} (not retried for {RECHECK_SECONDS:.0f} s)"
        try:
            self._celery().send_task(
                TASK,
                args=[self.location, job_id],
                task_id=job_id,
                queue=self.config.broker_queue,
                countdown=countdown,
                retry=False,
            )
        except Exception as exc:  # kombu, redis and socket errors alike: the broker is unusable now
            problem = f"broker unreachable ({type(exc).__name__}: {str(exc)[:200]})"
            with self._mu:
                self._down = (time.monotonic() + RECHECK_SECONDS, problem)
            return problem
        with self._mu:
            self._down = None
        return None

    def close(self) -> None:
        with self._mu:
            if self._app is not None:
                self._app.close()
                self._app = None

    def _celery(self) -> Celery:
        with self._mu:
            if self._app is None:
                self._app = make_app(str(self.config.broker_url), self.config.broker_queue)
            return self._app
