"""Each rule beyond dense + BM25 engages only on evidence from the query and the scope (fake embedder: mechanisms
only; quality is measured by ``memlane bench docs`` with the real model)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane import Memory, Message
from memlane.config import preset
from memlane.models import MemoryItem
from memlane.retrieval.query import analyse_query, exact_match_terms
from memlane.retrieval.scope_evidence import Frequencies, alternates, entity_rarity, idf_weight, rarity
from memlane.retrieval.search import Planner
from memlane.retrieval.shape import query_shape

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def _notes(n: int, *, common: str = "", rare: dict[int, str] | None = None) -> list[Message]:
    """``n`` unrelated short documents; ``common`` in every one, ``rare[i]`` in document ``i`` only."""
    topics = ["river", "garden", "violin", "harbour", "glacier", "bakery", "comet", "lantern", "meadow", "orchard"]
    out = []
    for i in range(n):
        extra = (rare or {}).get(i, "")
        text = f"Document {i} is about the {topics[i % len(topics)]} number {i}. {common} {extra}".strip()
        out.append(Message(role="user", content=text))
    return out


def test_rarity_falls_with_document_frequency_and_ends_at_the_square_root() -> None:
    assert rarity(1, 10_000) == 1.0 and rarity(0, 10_000) == 0.0
    assert rarity(10, 10_000) == pytest.approx(0.5) and rarity(100, 10_000) == 0.0 and rarity(5_000, 10_000) == 0.0
    assert rarity(2, 10_000) > rarity(3, 10_000) > rarity(50, 10_000)
    assert idf_weight(1, 100) == 1.0 and idf_weight(100, 100) == 0.0 and 0.0 < idf_weight(10, 100) < 1.0


def test_a_quoted_sentence_is_no_exact_term_but_a_quoted_word_is() -> None:
    assert exact_match_terms('<Caroline>: "I went to the support group yesterday."') == []
    assert exact_match_terms("Mel said \u201cthat sounds great!\u201d") == []
    assert exact_match_terms("TypeError: unhashable type: 'Point'") == ["TypeError", "Point"]
    assert exact_match_terms('search for "blue widget"') == ["blue widget"]
    assert exact_match_terms("run `git commit --amend` here") == ["git commit --amend"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Caroline: I went to the group.", "Melanie: When was that?"),
        ("<Caroline>: I went to the group.", "<Melanie>: When was that?"),
        ('<Caroline>: "I went to the group."', '<Melanie>: "When was that?"'),
        ("<Caroline> I went to the group.", "<Melanie> When was that?"),
        ("[Caroline] I went to the group.", "[Melanie] When was that?"),
        ("**Caroline**: I went to the group.", "**Melanie**: When was that?"),
        ("**Caroline:** I went to the group.", "**Melanie:** When was that?"),
    ],
)
def test_speaker_labels_in_common_forms_read_as_turns(first: str, second: str) -> None:
    shape = query_shape(f"{first}\n{second}")
    assert shape.turns == 2 and shape.speakers == ("Caroline", "Melanie")
    assert shape.last_turn == "When was that?" and shape.said == "I went to the group.\nWhen was that?"
    assert shape.is_dialogue and shape.is_follow_up


def test_quoted_lines_without_labels_are_turns_too() -> None:
    shape = query_shape('"I went to the group yesterday."\n"Oh nice, how was it?"')
    assert shape.turns == 2 and shape.speakers == () and shape.last_turn == "Oh nice, how was it?"


def test_a_quoted_dialogue_gets_the_dialogue_rules_not_a_keyword_boost() -> None:
    excerpt = (
        '<Caroline>: "I went to the LGBTQ support group yesterday."\n<Melanie>: "That sounds great, tell me more."'
    )
    plan = Planner().plan(analyse_query(excerpt, NOW), preset("multi"), entities=[])
    assert plan.fusion.weights["lexical"] < 0.4 and "dialogue excerpt of 2 turns" in plan.triggers["lexical"]


def test_the_keyword_boost_scales_with_the_terms_rarity_in_the_planner() -> None:
    f = analyse_query("what does ERR_CONN_RESET_42 mean?", NOW)
    multi = preset("multi")
    assert Planner().plan(f, multi, entities=[], rarity={"ERR_CONN_RESET_42": 1.0}).fusion.weights["lexical"] == 0.8
    assert Planner().plan(f, multi, entities=[], rarity={"ERR_CONN_RESET_42": 0.5}).fusion.weights[
        "lexical"
    ] == pytest.approx(0.6)
    common = Planner().plan(f, multi, entities=[], rarity={"ERR_CONN_RESET_42": 0.0})
    assert common.fusion.weights["lexical"] == 0.4 and "exact-match" not in common.triggers["lexical"]


def memory_triggers(notes: list[Message], query: str) -> str:
    """The lexical trigger of the best hit for ``query`` over ``notes`` added in one call."""
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(notes, user_id="u")
        return memory.search(query, user_id="u", top_k=1)[0].triggers["lexical"]


def _lexical_weight(memory: Memory, query: str) -> float:
    hits = memory.search(query, user_id="u", top_k=5)
    weights = {h.breakdown["lexical"].weight for h in hits if "lexical" in h.breakdown}
    assert len(weights) == 1, weights
    return weights.pop()


def test_an_identifier_rare_in_the_scope_is_boosted_and_a_common_one_is_not() -> None:
    notes = _notes(200, common="Uses FrameworkCore.", rare={7: "Raises ERR_QUOTA_XQ."})
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(notes, user_id="u")
        rare = _lexical_weight(memory, "why ERR_QUOTA_XQ?")
        common = _lexical_weight(memory, "why FrameworkCore in the violin?")
        hits = memory.search("why ERR_QUOTA_XQ?", user_id="u", top_k=1)
    # the one passage holding it (and the next, which indexes it as its previous turn): close to the full x2
    assert rare > 0.4 > common
    assert (
        "ERR_QUOTA_XQ" in hits[0].memory.text
        and "exact-match terms 'ERR_QUOTA_XQ' (rarity" in hits[0].triggers["lexical"]
    )
    plain = memory_triggers(notes, "why FrameworkCore in the violin?")
    assert "exact-match" not in plain


def _item(position: int, role: str, speaker: str | None = None) -> MemoryItem:
    return MemoryItem(
        id=f"m{position}",
        user_id="u",
        kind="message",
        text="x",
        role=role,
        speaker=speaker,
        position=position,
        timestamp=NOW,
        created_at=NOW,
        updated_at=NOW,
        content_hash=f"h{position}",
    )


def test_alternation_tells_a_conversation_from_a_batch() -> None:
    assert alternates([_item(0, "user"), _item(1, "assistant"), _item(2, "user")])
    assert alternates([_item(0, "user", "Ann"), _item(1, "user", "Bob"), _item(2, "user", "Ann")])
    assert not alternates([_item(p, "user") for p in range(10)])
    assert not alternates([_item(3, "user")])


def test_documents_added_together_are_not_each_others_context() -> None:
    """200 passages in one call share an implicit session at consecutive positions: no context, no session score."""
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(_notes(30), user_id="u")
        hits = memory.search("the violin number", user_id="u", top_k=10)
    assert hits
    assert all("context" not in h.breakdown and "session" not in h.breakdown for h in hits)


def test_a_conversation_keeps_its_context() -> None:
    turns = [
        Message(role="user", content="Where did you go on holiday last summer?"),
        Message(role="assistant", content="I went hiking in the Dolomites with my brother."),
        Message(role="user", content="Did you like the food there?"),
        Message(role="assistant", content="The polenta was wonderful."),
    ]
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(turns, user_id="u", session_id="s1")
        hits = memory.search("Where did you go on holiday?", user_id="u", top_k=4)
    assert any("context" in h.breakdown and h.breakdown["context"].contribution > 0 for h in hits)


def test_a_mention_of_an_entity_most_memories_name_counts_nothing_and_a_rare_one_does() -> None:
    """An entity held by more than the square root of the scope is no evidence (as a common exact-match term)."""
    notes = [Message(role="user", content=f"On day {i} I saw Priya at the market.") for i in range(12)]
    notes.append(Message(role="user", content="On day 20 I saw Oskar at the harbour."))
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(notes, user_id="u")
        common = memory.search("What did Priya buy?", user_id="u", top_k=5)
        rare = memory.search("What did Oskar buy?", user_id="u", top_k=5)
    assert common and not any("entity" in h.breakdown for h in common)
    rare_part = max(h.breakdown["entity"].contribution for h in rare if "entity" in h.breakdown)
    assert rare_part > 0


def test_entity_rarity_is_a_terms_rarity() -> None:
    class Counts:
        def entity_memories(self, user_id: str, entity: str, limit: int) -> list[str]:
            return [f"m{i}" for i in range({"rare": 1, "some": 5, "everywhere": 40}[entity])]

        def text_search(self, user_id: str, terms: list[str], limit: int | None, filters: object) -> list[str]:
            return []  # no text holds these names (they came with the memories' metadata, say)

    found = entity_rarity(Frequencies(Counts()), "u", ["rare", "some", "everywhere"], 400)  # type: ignore[arg-type]
    assert found["rare"] == 1.0 and 0.0 < found["some"] < 1.0 and found["everywhere"] == 0.0


def test_an_entity_whose_name_is_a_common_word_of_the_scope_is_no_evidence() -> None:
    """A word the extractor took for a name in one memory ("Possible values: ...") that hundreds of memories say as
    a plain word ("is it possible to ...?") names nothing in particular; a name as rare in the text keeps its weight,
    and of a two-word name the rarer word counts.
    """
    involved = {"possible": 1, "oskar": 1, "mac os": 1}
    said = {"possible": 60, "oskar": 1, "mac": 2, "os": 50}

    class Counts:
        def entity_memories(self, user_id: str, entity: str, limit: int) -> list[str]:
            return [f"m{i}" for i in range(involved[entity])]

        def text_search(self, user_id: str, terms: list[str], limit: int | None, filters: object) -> list[str]:
            return [f"m{i}" for i in range(min(said[terms[0]], limit or 10**6))]

    found = entity_rarity(Frequencies(Counts()), "u", ["possible", "oskar", "mac os"], 400)  # type: ignore[arg-type]
    assert found["possible"] == 0.0
    assert found["oskar"] == 1.0
    assert found["mac os"] == pytest.approx(rarity(2, 400))


def test_a_lone_candidates_tiny_bm25_does_not_earn_the_whole_keyword_weight() -> None:
    """Regression: on a one-memory store BM25's floored IDF gave 1e-6, min-max made it 1.0, and it added 0.4."""
    with Memory(":memory:", embedder="hash") as memory:
        memory.add([Message(role="user", content="I like green tea in the morning.")], user_id="u")
        hits = memory.search("green tea", user_id="u", top_k=1)
    assert hits
    lexical = hits[0].breakdown.get("lexical")
    assert lexical is None or lexical.contribution <= lexical.weight * max(lexical.raw, 0.0) + 1e-9
    assert hits[0].score == pytest.approx(sum(b.contribution for b in hits[0].breakdown.values()))


def test_the_keyword_weight_follows_how_specific_the_querys_words_are() -> None:
    f = analyse_query("how do I change the last commit?", NOW)
    multi = preset("multi")
    plain = Planner().plan(f, multi, entities=[], specific=lambda terms: 1.0)
    assert plain.fusion.weights["lexical"] == 0.4
    common = Planner().plan(f, multi, entities=[], specific=lambda terms: 0.5)
    assert common.fusion.weights["lexical"] == pytest.approx(0.2) and "IDF in this scope" in common.triggers["lexical"]
    assert Planner().plan(f, preset("weighted"), entities=[], specific=lambda t: 0.5).fusion.weights["lexical"] == 0.4


def test_a_word_few_memories_hold_keeps_more_keyword_weight_than_one_all_hold() -> None:
    notes = _notes(100, common="Commit the change.", rare={3: "The reflog keeps old tips."})
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(notes, user_id="u")
        rare = _lexical_weight(memory, "what does the reflog keep?")
        common = _lexical_weight(memory, "how do I commit a change to the violin?")
    assert 0.3 < rare <= 0.4 and common < rare
