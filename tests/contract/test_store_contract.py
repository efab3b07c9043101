"""The store contract: every backend must pass these through the public Memory API."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from memlane import (
    HistoryEvent,
    ImportFormatError,
    Memory,
    MemoryKind,
    Message,
    MissingScopeError,
    NotFoundError,
    UnknownFilterError,
    ValidationError,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def seed(memory: Memory) -> list[str]:
    msgs = [
        {"role": "user", "name": "Ana", "content": "I adopted a beagle called Biscuit", "timestamp": T0.isoformat()},
        {"role": "assistant", "content": "Biscuit is a lovely name for a beagle", "metadata": {"lang": "en"}},
        {"role": "user", "name": "Ana", "content": "My sister Ines lives in Porto", "metadata": {"topic": "family"}},
    ]
    ids = [it.id for it in memory.add(msgs, user_id="ana", session_id="s1", timestamp=T0 + timedelta(hours=1)).items]
    ids += [it.id for it in memory.add("Bob plays the trumpet in a jazz band", user_id="bob", session_id="s9").items]
    return ids


def test_add_keeps_every_message_losslessly(memory: Memory) -> None:
    ids = seed(memory)
    first = memory.get(ids[0], user_id="ana")
    assert first.kind is MemoryKind.MESSAGE
    assert (first.role, first.speaker, first.text) == ("user", "Ana", "I adopted a beagle called Biscuit")
    assert first.timestamp == T0
    assert first.session_id == "s1"
    second = memory.get(ids[1], user_id="ana")
    assert second.timestamp == T0 + timedelta(hours=1)  # the add-level default applies when a message has none
    assert second.metadata == {"lang": "en"}
    assert second.content_hash and len(second.content_hash) == 64
    assert [h.event for h in memory.history(ids[0], user_id="ana")] == [HistoryEvent.ADD]


def test_plain_string_is_one_user_message(memory: Memory) -> None:
    [item] = memory.add("I like green tea", user_id="u").items
    assert (item.role, item.text, item.speaker) == ("user", "I like green tea", None)


def test_message_objects_and_metadata_merge(memory: Memory) -> None:
    [item] = memory.add(
        [Message(content="hello", name="Zoe", metadata={"a": 2})], user_id="u", metadata={"a": 1, "b": True}
    ).items
    assert item.metadata == {"a": 2, "b": True}


def test_search_returns_explained_hits_in_scope(memory: Memory) -> None:
    seed(memory)
    hits = memory.search("beagle Biscuit", user_id="ana", top_k=2)
    assert hits and "Biscuit" in hits[0].memory.text
    assert all(h.memory.user_id == "ana" for h in hits)
    top = hits[0]
    assert set(top.breakdown) >= {"dense", "lexical"}
    assert top.score == pytest.approx(sum(b.contribution for b in top.breakdown.values()))
    assert memory.search("trumpet jazz", user_id="ana", top_k=10)[0].memory.user_id == "ana"
    assert memory.search("anything", user_id="nobody") == []


def test_search_records_access(memory: Memory) -> None:
    ids = seed(memory)
    hit = memory.search("beagle", user_id="ana", top_k=1)[0]
    assert hit.memory.access_count == 1
    stored = memory.get(hit.memory.id, user_id="ana")
    assert stored.access_count == 1 and stored.last_accessed is not None
    assert memory.get(ids[3], user_id="bob").access_count == 0


def test_access_counts_of_several_searches_add_up(memory: Memory) -> None:
    seed(memory)
    first = memory.search("beagle", user_id="ana", top_k=1)[0]
    for _ in range(3):
        assert memory.search("beagle", user_id="ana", top_k=1)[0].memory.id == first.memory.id
    memory.search("trumpet jazz", user_id="bob", top_k=1)
    stored = memory.get(first.memory.id, user_id="ana")
    assert stored.access_count == 4
    assert stored.last_accessed is not None and stored.last_accessed >= first.memory.last_accessed
    assert sum(item.access_count for item in memory.list(user_id="bob")) == 1


def test_filters(memory: Memory) -> None:
    seed(memory)
    assert {h.memory.role for h in memory.search("Biscuit beagle", user_id="ana", filters={"role": "assistant"})} == {
        "assistant"
    }
    assert memory.search("beagle", user_id="ana", filters={"session_id": "other"}) == []
    only = memory.search("sister", user_id="ana", filters={"metadata": {"topic": "family"}})
    assert [h.memory.text for h in only] == ["My sister Ines lives in Porto"]
    late = memory.list(user_id="ana", filters={"since": (T0 + timedelta(minutes=30)).isoformat()})
    assert len(late) == 2
    early = memory.list(user_id="ana", filters={"until": T0 + timedelta(minutes=30)})
    assert [m.text for m in early] == ["I adopted a beagle called Biscuit"]
    assert len(memory.list(user_id="ana", filters={"kind": "message"})) == 3
    with pytest.raises(UnknownFilterError, match="colour"):
        memory.search("x", user_id="ana", filters={"colour": "red"})


def test_update_reindexes_and_records_history(memory: Memory) -> None:
    ids = seed(memory)
    updated = memory.update(ids[2], user_id="ana", text="My sister Ines moved to Lisbon", importance=0.9)
    assert updated.text.endswith("Lisbon") and updated.importance == 0.9
    assert memory.search("Lisbon", user_id="ana", top_k=1)[0].memory.id == ids[2]
    assert not any(
        h.memory.id == ids[2]
        for h in memory.search("Porto", user_id="ana")
        if "lexical" in h.breakdown and h.breakdown["lexical"].raw > 0
    )
    events = memory.history(ids[2], user_id="ana")
    assert [e.event for e in events] == [HistoryEvent.ADD, HistoryEvent.UPDATE]
    assert (events[1].old_text, events[1].new_text) == (
        "My sister Ines lives in Porto",
        "My sister Ines moved to Lisbon",
    )


def test_delete_removes_from_every_index(memory: Memory) -> None:
    ids = seed(memory)
    memory.delete(ids[0], user_id="ana")
    with pytest.raises(NotFoundError):
        memory.get(ids[0], user_id="ana")
    assert ids[0] not in {h.memory.id for h in memory.search("beagle Biscuit adopted", user_id="ana", top_k=10)}
    assert ids[0] not in {m.id for m in memory.list(user_id="ana")}
    events = memory.history(ids[0], user_id="ana")
    assert [e.event for e in events] == [HistoryEvent.ADD, HistoryEvent.DELETE]
    assert all(e.old_text is None and e.new_text is None for e in events)
    with pytest.raises(NotFoundError):
        memory.delete(ids[0], user_id="ana")


def test_delete_all_is_per_user(memory: Memory) -> None:
    ids = seed(memory)
    assert memory.delete_all(user_id="ana") == 3
    assert memory.list(user_id="ana") == []
    assert memory.search("beagle", user_id="ana") == []
    with pytest.raises(NotFoundError):  # all history of the user went too
        memory.history(ids[0], user_id="ana")
    assert memory.get(ids[3], user_id="bob").text.startswith("Bob")


def test_other_users_memory_is_invisible(memory: Memory) -> None:
    ids = seed(memory)
    with pytest.raises(NotFoundError):
        memory.get(ids[3], user_id="ana")
    with pytest.raises(NotFoundError):
        memory.delete(ids[3], user_id="ana")
    with pytest.raises(NotFoundError):
        memory.update(ids[3], user_id="ana", text="hijacked")
    with pytest.raises(NotFoundError):
        memory.history(ids[3], user_id="ana")


@pytest.mark.parametrize(
    ("payload", "kwargs", "error", "match"),
    [
        ("", {"user_id": "u"}, ValidationError, "empty"),
        ("   ", {"user_id": "u"}, ValidationError, "empty"),
        ("x" * 40_000, {"user_id": "u"}, ValidationError, "limit"),
        ("bad \udcff text", {"user_id": "u"}, ValidationError, "UTF-8"),
        ("ok", {"user_id": ""}, MissingScopeError, "user_id"),
        ("ok", {"user_id": None}, MissingScopeError, "user_id"),
        ("ok", {"user_id": "u", "metadata": {"f": object()}}, ValidationError, "JSON"),
        ("ok", {"user_id": "u", "timestamp": "yesterday-ish"}, ValidationError, "timestamp"),
        ([], {"user_id": "u"}, ValidationError, "no messages"),
        ([{"content": "ok"}, {"text": "wrong key"}], {"user_id": "u"}, ValidationError, "message 1"),
        (["fine", ""], {"user_id": "u"}, ValidationError, "message 1"),
    ],
)
def test_bad_input_is_refused_and_nothing_stored(memory: Memory, payload, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        memory.add(payload, **kwargs)
    assert memory.stats().memories == 0


def test_bad_search_arguments(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="top_k"):
        memory.search("x", user_id="u", top_k=0)
    with pytest.raises(ValidationError, match="query"):
        memory.search("", user_id="u")
    with pytest.raises(MissingScopeError):
        memory.search("x", user_id="")


def test_export_import_round_trip_is_exact(memory: Memory, tmp_path) -> None:
    seed(memory)
    memory.search("beagle", user_id="ana")  # access counts must survive too
    buf = io.StringIO()
    assert memory.export(buf) == 4
    before = [it.model_dump() for it in memory.list(user_id="ana")] + [
        it.model_dump() for it in memory.list(user_id="bob")
    ]
    other = Memory(tmp_path / "copy.db", embedder=memory.embedder, config=memory.config)
    try:
        assert other.import_(io.StringIO(buf.getvalue()), keep_user_ids=True) == 4
        after = [it.model_dump() for it in other.list(user_id="ana")] + [
            it.model_dump() for it in other.list(user_id="bob")
        ]
        assert after == before
        assert other.import_(io.StringIO(buf.getvalue()), keep_user_ids=True) == 0  # existing ids are skipped
        assert other.search("beagle Biscuit", user_id="ana", top_k=1)[0].memory.text.startswith("I adopted")
    finally:
        other.close()


def test_import_rejects_malformed_files_whole(memory: Memory) -> None:
    buf = io.StringIO()
    seed(memory)
    memory.export(buf, user_id="bob")
    lines = buf.getvalue().splitlines()
    broken = "\n".join([*lines, json.dumps({"id": "x"})]) + "\n"
    target = Memory(":memory:", embedder=memory.embedder, config=memory.config)
    try:
        with pytest.raises(ImportFormatError, match="line 3"):
            target.import_(io.StringIO(broken), user_id="bob")
        assert target.stats().memories == 0
        with pytest.raises(ImportFormatError, match="header"):
            target.import_(io.StringIO('{"not": "a header"}\n'), user_id="bob")
        with pytest.raises(ImportFormatError, match="empty"):
            target.import_(io.StringIO(""), user_id="bob")
    finally:
        target.close()


def test_stats(memory: Memory) -> None:
    seed(memory)
    stats = memory.stats()
    assert (stats.memories, stats.users, stats.by_kind) == (4, 2, {"message": 4})
    assert stats.embedder == memory.embedder.identity and stats.dim == memory.embedder.dim
    assert memory.stats(user_id="bob").memories == 1


LOCKER = [
    {"role": "user", "name": "Ana", "content": "My locker code is 7 quixotrel."},
    {"role": "assistant", "content": "Got it, I'll keep that in mind."},
    {"role": "user", "name": "Ana", "content": "Thanks"},
]
LOCKER_REPLY = "Got it, I'll keep that in mind."


def _locker(memory: Memory) -> list[str]:
    return [it.id for it in memory.add(LOCKER, user_id="ana", session_id="gym").items]


def _bm25(memory: Memory, query: str) -> set[str]:
    return {h.memory.text for h in memory.search(query, user_id="ana", preset_name="bm25")}


def test_deleted_turn_is_not_found_through_the_next_turn(memory: Memory) -> None:
    first = _locker(memory)[0]
    assert LOCKER_REPLY in _bm25(memory, "quixotrel")  # the reply is found by the words it answers
    memory.delete(first, user_id="ana")
    assert _bm25(memory, "quixotrel") == set()


def test_updated_turn_old_words_are_not_found_through_the_next_turn(memory: Memory) -> None:
    first = _locker(memory)[0]
    memory.update(first, user_id="ana", text="My locker is number 12.")
    assert _bm25(memory, "quixotrel") == set()
    assert _bm25(memory, "locker number") == {"My locker is number 12.", LOCKER_REPLY}


def test_evicted_turn_is_not_found_through_the_next_turn_until_restored(memory: Memory) -> None:
    first = _locker(memory)[0]
    memory._store.evict("ana", [first], datetime.now(UTC))
    assert _bm25(memory, "quixotrel") == set()
    memory.restore(first, user_id="ana")
    assert _bm25(memory, "quixotrel") == {LOCKER[0]["content"], LOCKER_REPLY}
