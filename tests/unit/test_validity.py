"""Current facts first: messages whose claim a later memory superseded are linked to it and demoted in search."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memlane import Memory, Message
from memlane.models import MemoryKind
from memlane.retrieval.fusion import FusionSpec, fuse


@pytest.fixture
def kim() -> Iterator[Memory]:
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(
            [Message(role="user", name="Kim", content="I live in Denver.")],
            user_id="kim",
            session_id="s1",
            timestamp="2023-03-01T10:00:00+00:00",
        )
        memory.add(
            [Message(role="user", name="Kim", content="I moved to Austin.")],
            user_id="kim",
            session_id="s2",
            timestamp="2024-05-01T10:00:00+00:00",
        )
        yield memory


def _texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory.text for h in hits]


def test_the_current_fact_outranks_the_message_that_stated_the_old_value(kim: Memory) -> None:
    hits = kim.search("where does Kim live?", user_id="kim", top_k=5)
    texts = _texts(hits)
    denver = texts.index("I live in Denver.")
    fact = next(i for i, h in enumerate(hits) if h.memory.kind is not MemoryKind.MESSAGE and "Austin" in h.memory.text)
    assert fact < denver
    # The message that said it is the same statement: folded into the fact's hit, not a place of its own.
    assert [m.text for m in hits[fact].related] == ["I moved to Austin."]
    assert "I moved to Austin." not in texts
    stale = hits[denver]
    assert stale.breakdown["validity"].contribution < 0
    assert stale.score == pytest.approx(sum(b.contribution for b in stale.breakdown.values()))
    assert "superseded on 2024-05-01" in stale.triggers["validity"]
    assert hits[fact].memory.id in stale.triggers["validity"]
    assert hits[fact].triggers["validity"].startswith("current: it supersedes")


def test_as_of_before_the_move_and_history_still_reach_the_old_claim(kim: Memory) -> None:
    then = kim.search(
        "where does Kim live?", user_id="kim", top_k=5, filters={"as_of": datetime(2023, 6, 1, tzinfo=UTC)}
    )
    # The Denver statement (the fact that held then, with the message that said it folded into it) is not demoted.
    denver = next(h for h in then if "Denver" in h.memory.text)
    assert "I live in Denver." in [denver.memory.text, *(m.text for m in denver.related)]
    assert "validity" not in denver.breakdown and "Austin" not in then[0].memory.text
    old_fact = [
        m
        for m in kim.list(user_id="kim", filters={"include_superseded": True})
        if m.kind is not MemoryKind.MESSAGE and "Denver" in m.text
    ]
    assert old_fact and old_fact[0].superseded_by is not None
    assert any(e.event.value == "SUPERSEDE" for e in kim.history(old_fact[0].id, user_id="kim"))


def test_deleting_the_current_fact_lifts_the_demotion(kim: Memory) -> None:
    found = [m for h in kim.search("Austin", user_id="kim") for m in (h.memory, *h.related)]
    fact = next(m for m in found if m.kind is not MemoryKind.MESSAGE)
    kim.delete(fact.id, user_id="kim")
    hits = kim.search("where does Kim live?", user_id="kim", top_k=5)
    assert all("validity" not in h.breakdown for h in hits)


def test_a_penalty_demotes_but_never_nominates() -> None:
    spec = FusionSpec("weighted", {"dense": 1.0}, penalties={"validity": 0.9})
    fused = fuse({"dense": {"a": 0.9, "b": 0.5, "c": 0.1}, "validity": {"a": 1.0, "z": 1.0}}, spec)
    assert [f.key for f in fused] == ["b", "a", "c"]
    assert fused[1].score == pytest.approx(1.0 * 0.1) and fused[1].breakdown["validity"].contribution == pytest.approx(
        -0.9
    )
    with pytest.raises(ValueError):
        FusionSpec("weighted", {"dense": 1.0}, penalties={"validity": 1.5})
