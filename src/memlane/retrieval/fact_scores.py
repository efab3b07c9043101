"""Scores read off a candidate's stored facts: how recent it is, and whether its time matches the one asked about."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np

from memlane.enrich.temporal import TimeSpan
from memlane.store.records import CandidateFacts


def recencies(facts: Mapping[str, CandidateFacts], now: datetime, half_life_days: float) -> dict[str, float]:
    """Exponential decay of each candidate's age: 1.0 now, 0.5 after one half-life; future times count as now.

    Over an array: the whole pool, on every search.
    """
    if not facts:
        return {}
    stamps = np.fromiter((f.timestamp.timestamp() for f in facts.values()), dtype=np.float64, count=len(facts))
    age_days = np.maximum(now.timestamp() - stamps, 0.0) / 86_400.0
    return dict(zip(facts, np.power(0.5, age_days / half_life_days).tolist(), strict=True))


def temporal_score(
    span: TimeSpan | None, wants_time: bool, memory: tuple[datetime, datetime | None, datetime | None]
) -> float:
    """1.0 when the memory's event span (else its timestamp) falls in the asked span; 0.5 for a memory that names a
    time when the query asks "when"; else 0.
    """
    ts, start, end = memory
    if span is not None:
        if start is not None and end is not None:
            return 1.0 if span.start < end and start < span.end else 0.0
        return 1.0 if span.contains(ts) else 0.0
    return 0.5 if wants_time and start is not None else 0.0
