"""Idempotency hashes, near-duplicate detection and merging of sources."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.engine import content_hash
from memlane.errors import ConfigError
from memlane.lifecycle import DedupThresholds, is_near_duplicate, merge_into, merge_sources, normalised_hash
from memlane.lifecycle.dedup import cosine, entity_overlap
from memlane.models import MemoryItem, MemoryKind, SourceRef

T = datetime(2025, 1, 1, tzinfo=UTC)


def item(id: str, sources: list[str], **kw: object) -> MemoryItem:
    return MemoryItem(
        id=id,
        user_id="u",
        kind=MemoryKind.FACT,
        text=f"text {id}",
        timestamp=T,
        created_at=T,
        updated_at=T,
        content_hash="h",
        sources=[SourceRef(memory_id=s) for s in sources],
        **kw,  # type: ignore[arg-type]
    )


def test_hash_ignores_case_width_of_spaces_and_unicode_form() -> None:
    scope = ("ana", None, None, "fact")
    assert normalised_hash("Ana  likes\tTEA", scope) == normalised_hash("ana likes tea", scope)
    assert normalised_hash("Caf\u00e9", scope) == normalised_hash("Cafe\u0301", scope)
    assert normalised_hash("ana likes tea", scope) != normalised_hash("ana likes tea", ("bo", None, None, "fact"))
    assert len(normalised_hash("x", scope)) == 64


def test_hash_matches_the_engine_for_the_same_scope() -> None:
    assert normalised_hash("I like tea", ("u", "a", "s", "message")) == content_hash(
        "u", "a", "s", "message", "I like tea"
    )


@given(st.text(min_size=1), st.text(min_size=1))
def test_hash_ignores_how_words_are_spaced(text: str, user: str) -> None:
    respaced = "  " + " \n\t ".join(text.split()) + " "
    assert normalised_hash(text, (user,)) == normalised_hash(respaced, (user,))


def test_near_duplicates_need_similarity_and_shared_entities() -> None:
    a = np.array([1.0, 0.0, 0.1])
    b = np.array([0.98, 0.05, 0.12])
    assert cosine(a, b) > 0.99
    assert is_near_duplicate(a, b, ["Caroline", "Denver"], ["caroline", "Denver"])
    assert not is_near_duplicate(a, b, ["Caroline", "Denver"], ["Melanie", "Boston"])
    assert not is_near_duplicate(a, np.array([0.0, 1.0, 0.0]), ["Caroline"], ["Caroline"])
    assert is_near_duplicate(a, a, [], [])  # no entities on either side: similarity alone, stricter
    assert not is_near_duplicate(a, b, [], [], DedupThresholds(similarity_without_entities=0.9999))


def test_entity_overlap_and_threshold_checks() -> None:
    assert entity_overlap([], []) is None
    assert entity_overlap(["A", "b"], ["a", "C"]) == pytest.approx(1 / 3)
    with pytest.raises(ConfigError):
        DedupThresholds(similarity=1.5)
    with pytest.raises(ConfigError):
        cosine([1.0, 0.0], [1.0, 0.0, 0.0])


def test_merge_keeps_every_source_once_and_the_stronger_scores() -> None:
    kept = item("k", ["m1", "m2"], importance=0.4, confidence=0.7, entities=["Ana"])
    dup = item(
        "d",
        ["m2", "m3"],
        importance=0.8,
        confidence=0.6,
        entities=["Lisbon", "Ana"],
        event_time=datetime(2024, 5, 1, tzinfo=UTC),
    )
    merged = merge_into(kept, dup)
    assert [s.memory_id for s in merged.sources] == ["m1", "m2", "m3"]
    assert merged.entities == ["Ana", "Lisbon"] and merged.importance == 0.8 and merged.confidence == 0.7
    assert merged.event_time == dup.event_time and merged.text == kept.text and merged.id == "k"
    assert [s.memory_id for s in kept.sources] == ["m1", "m2"]  # pure
    assert [s.memory_id for s in merge_sources(dup.sources, kept.sources)] == ["m2", "m3", "m1"]
