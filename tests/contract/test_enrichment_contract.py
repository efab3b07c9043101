"""Write-time enrichment and query planning through the public API, on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder

T0 = datetime(2024, 5, 10, 18, 0, tzinfo=UTC)  # a Friday


def test_added_turns_carry_entities_event_time_and_labels(memory: Memory) -> None:
    items = memory.add(
        [
            {"name": "Maya", "content": "My sister Anna moved to Lisbon last month."},
            {"name": "Maya", "content": "I went hiking with Anna yesterday!"},
        ],
        user_id="maya",
        session_id="s1",
        timestamp=T0,
    ).items
    first, second = (memory.get(it.id, user_id="maya") for it in items)
    assert first.entities[0] == "maya" and "anna" in first.entities and "lisbon" in first.entities
    assert (first.event_time, first.event_end) == (datetime(2024, 4, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC))
    assert (second.event_time, second.event_end) == (
        datetime(2024, 5, 9, tzinfo=UTC),
        datetime(2024, 5, 10, tzinfo=UTC),
    )
    assert first.category and first.intent
    assert 0.0 <= first.importance <= 1.0


def test_aliases_learnt_in_one_add_resolve_mentions_in_a_later_one(memory: Memory) -> None:
    memory.add({"name": "Maya", "content": "My sister Anna Silva is visiting."}, user_id="maya", timestamp=T0)
    [later] = memory.add({"name": "Maya", "content": "Anna loved the museum."}, user_id="maya", timestamp=T0).items
    assert "anna silva" in memory.get(later.id, user_id="maya").entities
    other = memory.add({"name": "Zed", "content": "Anna is my boss."}, user_id="zed", timestamp=T0).items[0]
    assert "anna silva" not in memory.get(other.id, user_id="zed").entities  # aliases are per user


def test_two_people_of_one_first_name_met_in_two_adds_leave_it_unresolved(memory: Memory) -> None:
    # in one add the first name was dropped as ambiguous; told one turn per add (a chat), the first full name kept it
    memory.add({"name": "Maya", "content": "I had lunch with Anna Lee."}, user_id="maya", timestamp=T0)
    memory.add({"name": "Maya", "content": "I met Anna Smith at work."}, user_id="maya", timestamp=T0)
    [later] = memory.add({"name": "Maya", "content": "We saw Anna at the market."}, user_id="maya").items
    assert not {"anna lee", "anna smith"} & set(memory.get(later.id, user_id="maya").entities)
    memory.add({"name": "Maya", "content": "Anna Lee sent a card."}, user_id="maya", timestamp=T0)
    [last] = memory.add({"name": "Maya", "content": "We saw Anna at the market again."}, user_id="maya").items
    assert "anna lee" not in memory.get(last.id, user_id="maya").entities


def test_entity_dimension_finds_mentions_of_the_named_person(memory: Memory) -> None:
    memory.add(
        [
            {"name": "Maya", "content": "My sister Anna moved to Lisbon last month."},
            {"name": "Maya", "content": "The weather was lovely all week."},
        ],
        user_id="maya",
        timestamp=T0,
    )
    hits = memory.search("Where does Anna live now?", user_id="maya", top_k=2, preset_name="multi")
    lisbon = next(h for h in hits if "Lisbon" in h.memory.text)
    assert lisbon.breakdown["entity"].raw == 0.25  # mentioned, not said by Anna
    assert "'anna'" in lisbon.triggers["entity"]


def test_a_contracted_verb_after_a_name_does_not_hide_its_speaker(memory: Memory) -> None:
    # LoCoMo conv-47: John's "I think James’ll love it" made an entity "james ll" and "james" its alias, so a
    # question naming James looked for that entity, not for James's own turns
    memory.add(
        [
            {"name": "James", "content": "I adopted a puppy named Ned last week."},
            {"name": "John", "content": "I think James’ll love the new game too."},
        ],
        user_id="jj",
        timestamp=T0,
    )
    hits = memory.search("What pet did James adopt?", user_id="jj", top_k=2, preset_name="multi")
    assert "'james'" in hits[0].triggers["entity"] and "james ll" not in hits[0].triggers["entity"]
    assert hits[0].memory.text.startswith("I adopted") and hits[0].breakdown["entity"].raw == 1.0


def test_time_constraint_engages_the_temporal_dimension(memory: Memory) -> None:
    memory.add("I went hiking yesterday", user_id="u", timestamp=T0)
    memory.add("I baked bread", user_id="u", timestamp=datetime(2024, 7, 1, tzinfo=UTC))
    hits = memory.search("what did I do on 9 May 2024?", user_id="u", top_k=2, preset_name="multi")
    by_text = {h.memory.text: h for h in hits}
    assert by_text["I went hiking yesterday"].breakdown["temporal"].raw == 1.0
    assert by_text["I baked bread"].breakdown["temporal"].raw == 0.0
    assert "2024-05-09" in by_text["I went hiking yesterday"].triggers["temporal"]
    plain = memory.search("hiking", user_id="u", top_k=2, preset_name="multi")
    assert all("temporal" not in h.breakdown for h in plain)


def test_keyword_weight_is_raised_only_for_exact_match_terms(memory: Memory) -> None:
    notes = [f"The nightly job number {n} finished on time" for n in range(20)]
    memory.add([*notes, "The nightly job fails with ERR_CONN_RESET_42 again"], user_id="u", timestamp=T0)
    [code] = memory.search("why does ERR_CONN_RESET_42 happen?", user_id="u", top_k=1, preset_name="multi")
    [plain] = memory.search("which job fails again?", user_id="u", top_k=1, preset_name="multi")
    # raised in proportion to the term's rarity in this scope; a query without one is not raised
    assert (
        "ERR_CONN_RESET_42" in code.memory.text and "exact-match terms 'ERR_CONN_RESET_42'" in code.triggers["lexical"]
    )
    assert code.breakdown["lexical"].weight > 0.4 >= plain.breakdown["lexical"].weight
    assert "exact-match" not in plain.triggers["lexical"]


def test_non_english_and_emoji_turns_are_stored_and_found(memory: Memory) -> None:
    texts = ["Ich bin gestern nach Berlin gefahren 🚆", "我昨天去了北京", "ذهبت إلى القاهرة أمس", "🎉🎉🎉"]
    memory.add(texts, user_id="u", timestamp=T0)
    assert {it.text for it in memory.list(user_id="u")} == set(texts)
    assert memory.search("Berlin", user_id="u", top_k=4, preset_name="multi")


@pytest.fixture(params=["sqlite-file", "postgres"])
def two_processes(request: pytest.FixtureRequest, tmp_path: Path, config: Config) -> Iterator[tuple[Memory, Memory]]:
    """Two ``Memory`` objects on one store, as two application processes would hold it."""
    if request.param == "postgres":
        from tests.pg_server import postgres_url

        location: str | Path = postgres_url()
    else:
        location = tmp_path / "shared.db"
    first = Memory(location, embedder=HashEmbedder(), config=config)
    second = Memory(location, embedder=HashEmbedder(), config=config)
    yield first, second
    second.close()
    first.close()


def _entities(memory: Memory, text: str) -> list[str]:
    [item] = memory.add({"name": "Maya", "content": text}, user_id="maya", timestamp=T0).items
    return memory.get(item.id, user_id="maya").entities


def test_an_alias_another_process_learnt_resolves_here(two_processes: tuple[Memory, Memory]) -> None:
    here, there = two_processes
    assert "anna" in _entities(here, "I met Anna at the museum.")
    _entities(here, "The weather was lovely.")  # this process has read (and may keep) the table with "anna" alone
    assert "anna silva" in _entities(there, "My sister Anna Silva is visiting.")
    assert "anna silva" in _entities(here, "I called Anna today.")  # the table changed elsewhere: read again
    there.delete_all(user_id="maya")
    assert _entities(here, "I called Anna again.") == ["maya", "anna"]  # the erased table is not served from memory
