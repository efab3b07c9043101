"""A user's timeline: memories newest first by when they happened (the event time, else when they were stored),
filtered exactly by kind, category, entity, validity and flag, paged by a cursor (keyset) rather than an offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memlane.errors import ValidationError
from memlane.models import MemoryItem, MemoryKind, parse_time


@dataclass(frozen=True)
class TimelineFilter:
    """Which memories a timeline shows. ``entity`` is a canonical entity key (the service resolves a name or an
    alias to it); ``flagged_only``: those flagged as likely prompt injections.
    """

    kind: MemoryKind | None = None
    category: str | None = None
    entity: str | None = None
    include_superseded: bool = False
    flagged_only: bool = False


@dataclass(frozen=True)
class TimelineCursor:
    """Where a timeline page ended: the last memory's timeline time and id (the next page starts after it)."""

    at: datetime
    memory_id: str

    def encode(self) -> str:
        """The cursor as a string (for a URL); ``decode`` reads it back."""
        return f"{self.at.isoformat()}|{self.memory_id}"

    @classmethod
    def decode(cls, token: str) -> TimelineCursor:
        """A cursor from ``encode``; ``ValidationError`` naming the problem otherwise."""
        at, sep, memory_id = token.partition("|")
        if not sep or not memory_id:
            raise ValidationError("a timeline cursor is '<time>|<memory id>'")
        try:
            when = parse_time(at)
        except (ValueError, ValidationError):
            raise ValidationError(f"the timeline cursor's time {at[:40]!r} is not an ISO 8601 time") from None
        return cls(when, memory_id)


@dataclass(frozen=True)
class TimelinePage:
    """One page of a timeline and the cursor of the next (``None`` on the last page)."""

    items: list[MemoryItem]
    next: TimelineCursor | None


def timeline_time(item: MemoryItem) -> datetime:
    """The time a memory sorts by on a timeline: when it happened if known, else when it was stored."""
    return item.event_time or item.created_at
