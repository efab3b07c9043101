"""Background jobs delivered by a message broker (Celery over Redis, ``memlane[celery]``); the job table decides."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.broker.runner import JobRun, RetryPolicy, RunStatus
from memlane.config import Config

if TYPE_CHECKING:
    from memlane.broker.celery_app import Publisher

__all__ = ["JobRun", "RetryPolicy", "RunStatus", "publisher_for"]


def publisher_for(config: Config, location: str) -> Publisher | None:
    """The broker publisher of a store when ``config.broker_url`` names one (needs ``memlane[celery]``)."""
    if not config.broker_url:
        return None
    from memlane.broker.celery_app import Publisher

    return Publisher(config, location)
