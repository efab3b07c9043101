"""Forgetting: a survival score (importance + recency + usage), importance decay, and which memories to evict."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memlane.errors import ConfigError
from memlane.models import RECORD_KINDS, MemoryItem, MemoryKind, as_utc

DAY = 86_400.0


@dataclass(frozen=True)
class SurvivalWeights:
    """How much each part counts, and how fast things fade.

    ``importance_half_life_days``: an untouched memory's importance halves in this time (``None``: no decay).
    ``recency_half_life_days``: recency is 1 just after the last use (or creation) and halves each such period.
    ``usage_saturation``: this many accesses count as full usage (the scale is logarithmic).
    """

    importance: float = 0.5
    recency: float = 0.3
    usage: float = 0.2
    importance_half_life_days: float | None = 180.0
    recency_half_life_days: float = 30.0
    usage_saturation: int = 20

    def __post_init__(self) -> None:
        if min(self.importance, self.recency, self.usage) < 0 or self.importance + self.recency + self.usage <= 0:
            raise ConfigError("survival weights must not be negative and must not all be zero")
        if self.recency_half_life_days <= 0 or self.usage_saturation <= 0:
            raise ConfigError("recency_half_life_days and usage_saturation must be positive")
        if self.importance_half_life_days is not None and self.importance_half_life_days <= 0:
            raise ConfigError("importance_half_life_days must be positive or None")


@dataclass(frozen=True)
class SurvivalScore:
    """A memory's survival score and its parts (each part in [0, 1] before weighting)."""

    memory_id: str
    total: float
    importance: float
    recency: float
    usage: float


def _last_touch(item: MemoryItem) -> datetime:
    times = [as_utc(item.created_at), as_utc(item.timestamp)]
    if item.last_accessed is not None:
        times.append(as_utc(item.last_accessed))
    return max(times)


def _age_days(since: datetime, now: datetime) -> float:
    return max((as_utc(now) - as_utc(since)).total_seconds() / DAY, 0.0)


def decayed_importance(importance: float, age_days: float, half_life_days: float | None) -> float:
    """``importance`` halved every ``half_life_days`` of ``age_days`` (unchanged when there is no half-life)."""
    if half_life_days is None or age_days <= 0:
        return importance
    return float(importance * 0.5 ** (age_days / half_life_days))


def survival(item: MemoryItem, now: datetime, weights: SurvivalWeights | None = None) -> SurvivalScore:
    """The survival score of one memory at ``now``: weighted decayed importance, recency and usage, in [0, 1]."""
    w = weights or SurvivalWeights()
    idle = _age_days(_last_touch(item), now)
    importance = decayed_importance(item.importance, idle, w.importance_half_life_days)
    recency = 0.5 ** (idle / w.recency_half_life_days)
    usage = min(math.log1p(item.access_count) / math.log1p(w.usage_saturation), 1.0)
    total = (w.importance * importance + w.recency * recency + w.usage * usage) / (w.importance + w.recency + w.usage)
    return SurvivalScore(item.id, total, importance, recency, usage)


def choose_evictions(
    items: Sequence[MemoryItem],
    capacity: int,
    *,
    now: datetime,
    weights: SurvivalWeights | None = None,
    protect: Iterable[MemoryKind] = RECORD_KINDS,
) -> list[str]:
    """Ids of the memories to evict so that at most ``capacity`` evictable ones remain, lowest survival first.

    Memories of a ``protect``-ed kind (raw messages, by default) neither count nor go. Ties go to the older
    memory, then the smaller id, so the choice is deterministic.
    """
    if capacity < 0:
        raise ConfigError(f"capacity must not be negative, got {capacity}")
    protected = frozenset(protect)
    evictable = [it for it in items if it.kind not in protected]
    excess = len(evictable) - capacity
    if excess <= 0:
        return []
    scored = sorted(evictable, key=lambda it: (survival(it, now, weights).total, as_utc(it.timestamp), it.id))
    return [it.id for it in scored[:excess]]
