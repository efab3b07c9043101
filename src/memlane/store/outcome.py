"""``JobOutcome``: how a background job ended, written by the store in the same transaction as the job's results."""

from __future__ import annotations

from typing import Any, NamedTuple

from memlane.models import JobState


class JobOutcome(NamedTuple):
    """A job's final state, its error, and (when only part of it failed) the payload left to retry."""

    job_id: str
    state: JobState
    error: str | None = None
    payload: dict[str, Any] | None = None
