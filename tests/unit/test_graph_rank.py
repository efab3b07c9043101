"""Personalised PageRank (a pure function) and the offline relation reader."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.enrich.aliases import EntityResolver
from memlane.graph.rank import personalised_pagerank
from memlane.graph.relations import kin_predicate, read_relations
from memlane.models import MemoryItem

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_mass_flows_two_hops_and_decays_with_distance() -> None:
    edges = [("q", "a", 1.0), ("a", "b", 1.0), ("b", "c", 1.0), ("x", "y", 1.0)]
    ranked = personalised_pagerank(edges, {"q": 1.0}, restart=0.5)
    assert sum(ranked.mass.values()) == pytest.approx(1.0)
    assert ranked.mass["a"] > ranked.mass["b"] > ranked.mass["c"] > 0
    assert ranked.mass["x"] == ranked.mass["y"] == 0.0  # not connected to the seed
    assert ranked.received["q"] < ranked.mass["q"]  # the restart share is not "received"


def test_heavier_edges_carry_more_mass_and_seeds_may_be_isolated() -> None:
    ranked = personalised_pagerank([("s", "heavy", 3.0), ("s", "light", 1.0)], {"s": 1.0, "alone": 1.0})
    assert ranked.mass["heavy"] == pytest.approx(3 * ranked.mass["light"])
    assert ranked.mass["alone"] > 0
    assert personalised_pagerank([("a", "b", 1.0)], {}).mass == {}
    with pytest.raises(ValueError, match="restart"):
        personalised_pagerank([], {"a": 1.0}, restart=0.0)


@given(
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.floats(0.0, 5.0)), max_size=30),
    st.dictionaries(st.integers(0, 8), st.floats(0.01, 1.0), min_size=1, max_size=4),
)
def test_masses_are_a_distribution(edges: list[tuple[int, int, float]], seeds: dict[int, float]) -> None:
    ranked = personalised_pagerank(edges, seeds)
    assert sum(ranked.mass.values()) == pytest.approx(1.0)
    assert all(v >= 0 for v in ranked.mass.values())
    assert all(ranked.received[n] <= ranked.mass[n] + 1e-12 for n in ranked.mass)


def item(text: str, speaker: str | None = "Melanie", role: str = "user") -> MemoryItem:
    return MemoryItem(
        id=str(abs(hash(text))),
        user_id="u",
        text=text,
        timestamp=T0,
        created_at=T0,
        updated_at=T0,
        content_hash="h",
        speaker=speaker,
        role=role,
    )


def read(*texts: str, speaker: str | None = "Melanie", role: str = "user") -> set[tuple[str, str, str]]:
    resolver = EntityResolver()
    items = [item(t, speaker, role) for t in texts]
    for it in items:
        resolver.observe(it.text, it.speaker, it.role)
    return {(c.subject, c.predicate, c.object) for c in read_relations(items, resolver)}


def test_kinship_reads_in_the_direction_of_the_relation() -> None:
    assert kin_predicate("son") == ("parent_of", False)
    assert kin_predicate("mom") == ("parent_of", True)
    assert kin_predicate("best friend") == ("best_friend_of", True)
    assert read("My son Max started school.") == {("melanie", "parent_of", "max")}
    assert read("My mom Rita called.") == {("rita", "parent_of", "melanie")}
    assert read("Dave, my husband, cooked.") == {("dave", "spouse_of", "melanie")}


def test_unnamed_user_and_assistant() -> None:
    assert read("I work at Initech.", speaker=None) == {("user", "works_at", "initech")}
    assert read("I work at Initech.", speaker=None, role="assistant") == set()


def test_likes_keep_a_short_object_and_skip_deictic_ones() -> None:
    assert read("My kids love the beach with their cousins.") == {("melanie kids", "likes", "beach")}
    assert read("I'm really into painting landscapes.") == {("melanie", "likes", "painting landscapes")}
    assert read("I love it!", "I love that you said that.") == set()


def test_a_subject_of_several_words_is_the_known_name_it_ends_with() -> None:
    # "Anna Lee moved": the subject is Anna Lee, not "lee"; "Yesterday Tom moved": Tom
    assert read("My sister Anna Lee moved to Denver.") == {
        ("anna lee", "sister_of", "melanie"),
        ("anna lee", "lives_in", "denver"),
    }
    assert read("Yesterday Tom moved to Paris.") == {("tom", "lives_in", "paris")}
    assert read("My therapist Dr. Okafor is great.") == {("okafor", "therapist_of", "melanie")}
