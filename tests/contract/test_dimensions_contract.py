"""The multi-dimensional read path on every backend: positions, context, entities, filters and tenant scope."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane import Memory, MemoryKind

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def conversation(memory: Memory, user: str = "ana") -> list[str]:
    turns = [
        ("Ana", "Guess what I finally bought last weekend"),
        ("Ben", "No idea, tell me!"),
        ("Ana", "A red kayak, I take it to the lake every Sunday"),
        ("Ben", "I spent Sunday repairing my bicycle"),
    ]
    msgs = [{"role": "user", "name": who, "content": text} for who, text in turns]
    return [it.id for it in memory.add(msgs, user_id=user, session_id="s1", timestamp=T0).items]


def test_positions_follow_arrival_within_each_session(memory: Memory) -> None:
    ids = conversation(memory)
    more = memory.add(["one more turn", "and another"], user_id="ana", session_id="s1").items
    other = memory.add("a turn of another session", user_id="ana", session_id="s2").items
    assert [memory.get(i, user_id="ana").position for i in ids] == [0, 1, 2, 3]
    assert [it.position for it in more] == [4, 5]
    assert other[0].position == 0


def test_speaker_is_recorded_as_an_entity(memory: Memory) -> None:
    ids = conversation(memory)
    assert memory.get(ids[0], user_id="ana").entities[:1] == ["ana"]
    assert memory.get(ids[1], user_id="ana").entities[:1] == ["ben"]


def test_entity_dimension_fires_only_for_named_people(memory: Memory) -> None:
    conversation(memory)
    hits = memory.search("What did Ben do on Sunday?", user_id="ana", top_k=4, preset_name="multi")
    said_by_ben = [h for h in hits if h.memory.speaker == "Ben"]
    assert said_by_ben and all(h.breakdown["entity"].raw == 1.0 for h in said_by_ben)
    assert "'ben'" in said_by_ben[0].triggers["entity"]
    unnamed = memory.search("what happened on sunday?", user_id="ana", top_k=4, preset_name="multi")
    assert all("entity" not in h.breakdown for h in unnamed)


def test_context_dimension_scores_a_turn_by_its_neighbours(memory: Memory) -> None:
    ids = conversation(memory)
    hits = memory.search("kayak on the lake", user_id="ana", top_k=4, preset_name="multi")
    by_id = {h.memory.id: h for h in hits}
    kayak = by_id[ids[2]]
    neighbour = by_id[ids[1]]
    assert neighbour.breakdown["context"].raw > 0.0
    assert neighbour.breakdown["context"].raw >= kayak.breakdown["context"].raw
    for hit in hits:  # contributions still add up to the score
        assert hit.score == pytest.approx(sum(b.contribution for b in hit.breakdown.values()))


def test_context_never_crosses_users_or_sessions(memory: Memory) -> None:
    conversation(memory, user="ana")
    conversation(memory, user="eve")
    memory.add("kayak kayak kayak on the lake", user_id="ana", session_id="s2", timestamp=T0)
    for user in ("ana", "eve"):
        hits = memory.search("kayak on the lake", user_id=user, top_k=10, preset_name="multi")
        assert hits and {h.memory.user_id for h in hits} == {user}
    eve = memory.search("kayak on the lake", user_id="eve", top_k=10, preset_name="multi")
    assert all(h.memory.session_id == "s1" for h in eve)


def test_neighbours_outside_the_filters_are_never_returned(memory: Memory) -> None:
    conversation(memory)
    memory.add(["kayak trip planning", "bring a paddle"], user_id="ana", session_id="s2", timestamp=T0)
    hits = memory.search("kayak", user_id="ana", top_k=10, filters={"session_id": "s2"}, preset_name="multi")
    assert hits and all(h.memory.session_id == "s2" for h in hits)
    hits = memory.search("kayak", user_id="ana", top_k=10, filters={"speaker": "Ana"}, preset_name="multi")
    assert hits and all(h.memory.speaker == "Ana" for h in hits)


def test_deleting_a_memory_removes_its_entities(memory: Memory) -> None:
    ids = conversation(memory)
    memory.delete(ids[1], user_id="ana")
    hits = memory.search("What did Ben say?", user_id="ana", top_k=10, preset_name="multi")
    assert ids[1] not in {h.memory.id for h in hits}
    assert all(h.memory.kind is MemoryKind.MESSAGE for h in hits)


def test_export_import_keeps_the_enrichment(memory: Memory, tmp_path: object) -> None:
    import io

    conversation(memory)
    buf = io.StringIO()
    memory.export(buf, user_id="ana")
    before = {it.id: it for it in memory.list(user_id="ana")}
    memory.delete_all(user_id="ana")
    buf.seek(0)
    memory.import_(buf, user_id="ana")
    after = {it.id: it for it in memory.list(user_id="ana")}
    assert {k: (v.position, v.entities) for k, v in after.items()} == {
        k: (v.position, v.entities) for k, v in before.items()
    }


def test_a_reply_indexes_its_previous_turns_words_and_notes_added_together_do_not(memory: Memory) -> None:
    """The full-text index's previous-turn column holds another speaker's or role's turn only: notes or documents
    added in one call (one role, no session) are no context of each other, in the read model and in SQL alike.
    """
    from memlane.models import Message

    memory.add(["The quixotrel valve sits on the left.", "Clean the filter every month."], user_id="notes")
    memory.add(
        [
            Message(role="user", content="Where does the quixotrel valve sit?"),
            Message(role="assistant", content="On the left side, under the sink."),
        ],
        user_id="chat",
        session_id="s1",
    )
    since = datetime(2000, 1, 1, tzinfo=UTC)  # a filter the read model does not serve: the SQL full-text path
    for filters in (None, {"since": since}):
        notes = memory.search("quixotrel", user_id="notes", preset_name="bm25", filters=filters)
        assert [h.memory.text for h in notes] == ["The quixotrel valve sits on the left."], filters
        chat = memory.search("quixotrel", user_id="chat", preset_name="bm25", filters=filters)
        assert {h.memory.text for h in chat} == {
            "Where does the quixotrel valve sit?",
            "On the left side, under the sink.",
        }, filters
