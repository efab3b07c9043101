"""Survival score, importance decay and the choice of memories to evict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.errors import ConfigError
from memlane.lifecycle import SurvivalWeights, choose_evictions, decayed_importance, survival
from memlane.models import MemoryItem, MemoryKind

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def memory(
    id: str,
    *,
    days_old: float = 0,
    importance: float = 0.5,
    uses: int = 0,
    kind: MemoryKind = MemoryKind.FACT,
    used_days_ago: float | None = None,
) -> MemoryItem:
    at = NOW - timedelta(days=days_old)
    return MemoryItem(
        id=id,
        user_id="u",
        kind=kind,
        text=id,
        timestamp=at,
        created_at=at,
        updated_at=at,
        content_hash="h",
        importance=importance,
        access_count=uses,
        last_accessed=None if used_days_ago is None else NOW - timedelta(days=used_days_ago),
    )


def test_importance_halves_every_half_life() -> None:
    assert decayed_importance(0.8, 180, 180) == pytest.approx(0.4)
    assert decayed_importance(0.8, 360, 180) == pytest.approx(0.2)
    assert decayed_importance(0.8, 360, None) == 0.8


def test_parts_and_total() -> None:
    fresh = survival(memory("a", importance=1.0, uses=20), NOW)
    assert (fresh.importance, fresh.recency, fresh.usage) == (1.0, 1.0, 1.0) and fresh.total == pytest.approx(1.0)
    stale = survival(memory("b", days_old=30, importance=0.5), NOW, SurvivalWeights(importance_half_life_days=None))
    assert stale.recency == pytest.approx(0.5) and stale.usage == 0
    assert stale.total == pytest.approx((0.5 * 0.5 + 0.3 * 0.5) / 1.0)


def test_use_refreshes_recency_and_stops_decay() -> None:
    used = survival(memory("u", days_old=300, used_days_ago=1, uses=3), NOW)
    unused = survival(memory("n", days_old=300, uses=3), NOW)
    assert used.recency > unused.recency and used.importance > unused.importance


def test_weights_are_configurable_and_checked() -> None:
    only_usage = SurvivalWeights(importance=0, recency=0, usage=1)
    assert survival(memory("x", importance=1.0), NOW, only_usage).total == 0
    for bad in (
        {"importance": -1},
        {"importance": 0, "recency": 0, "usage": 0},
        {"recency_half_life_days": 0},
        {"importance_half_life_days": 0},
    ):
        with pytest.raises(ConfigError):
            SurvivalWeights(**bad)  # type: ignore[arg-type]


def test_evicts_the_lowest_survivors_down_to_capacity_and_never_messages() -> None:
    items = [
        memory("keep-important", days_old=200, importance=1.0),
        memory("keep-used", days_old=200, uses=20, used_days_ago=1),
        memory("go-old", days_old=400, importance=0.2),
        memory("go-older", days_old=800, importance=0.2),
        memory("fresh", importance=0.5),
        memory("raw", days_old=900, importance=0.0, kind=MemoryKind.MESSAGE),
    ]
    assert choose_evictions(items, 3, now=NOW) == ["go-older", "go-old"]
    assert choose_evictions(items, 5, now=NOW) == []
    assert "raw" in choose_evictions(items, 0, now=NOW, protect=())
    with pytest.raises(ConfigError):
        choose_evictions(items, -1, now=NOW)


def test_ties_are_broken_by_age_then_id() -> None:
    a, b = memory("b", importance=0.3), memory("a", importance=0.3)
    assert choose_evictions([a, b], 1, now=NOW) == ["a"]


@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 50), st.floats(0, 1000)), max_size=30), st.integers(0, 40))
def test_eviction_properties(specs: list[tuple[float, int, float]], capacity: int) -> None:
    items = [memory(f"m{i}", importance=imp, uses=uses, days_old=age) for i, (imp, uses, age) in enumerate(specs)]
    gone = choose_evictions(items, capacity, now=NOW)
    assert len(gone) == max(len(items) - capacity, 0) and len(set(gone)) == len(gone)
    scores = {it.id: survival(it, NOW).total for it in items}
    kept = [s for i, s in scores.items() if i not in gone]
    assert all(scores[g] <= min(kept, default=1.0) for g in gone)
    assert all(0.0 <= s <= 1.0 for s in scores.values())
