"""Job records that cross the store seam: how a job ended, who holds it, and the refusal of a fenced write."""

from __future__ import annotations

from typing import Any, NamedTuple

from memlane.errors import StoreError
from memlane.models import JobState


class JobOutcome(NamedTuple):
    """A job's final state, its error, and (when only part of it failed) the payload left to retry.

    ``owner`` (when given) must still hold the job's lease, and every id in ``requires`` must still name a memory
    of the job's user, at the moment the outcome is written; otherwise the whole write is refused
    (``JobFencedError``) and nothing of it is stored.
    """

    job_id: str
    state: JobState
    error: str | None = None
    payload: dict[str, Any] | None = None
    owner: str | None = None
    requires: tuple[str, ...] = ()


class JobClaim(NamedTuple):
    """A lease on a job: the process-unique ``owner`` and the moment (µs since the epoch) it lapses."""

    owner: str
    until: int


class JobFencedError(StoreError):
    """A job's write was refused: its lease was lost, it was cancelled (its user deleted), or a memory it read
    was deleted meanwhile. Nothing of the write was stored.
    """
