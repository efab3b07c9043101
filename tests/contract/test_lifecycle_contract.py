"""Extraction and the memory lifecycle end to end, on every backend: idempotency, validity, eviction, deletes."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane import Config, Filters, HistoryEvent, Memory, MemoryKind, NotFoundError
from memlane.embedding.fake import HashEmbedder
from tests.conftest import BACKENDS, open_backend

T2021 = datetime(2021, 3, 1, 9, 0, tzinfo=UTC)
T2023 = datetime(2023, 6, 1, 9, 0, tzinfo=UTC)

CONVERSATION = [
    {"role": "user", "name": "Maya", "content": "I live in Boston."},
    {"role": "assistant", "content": "Nice city!"},
    {"role": "user", "name": "Maya", "content": "My favourite food is sushi."},
    {"role": "user", "name": "Maya", "content": "Thanks!"},
    {"role": "user", "name": "Maya", "content": "Thanks!"},
]


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path, config: Config) -> Iterator[Memory]:
    m = open_backend(request.param, tmp_path, config.with_(infer=True))
    yield m
    m.close()


def typed(memory: Memory, user_id: str, **filters: object) -> list[str]:
    kinds = [k for k in MemoryKind if k is not MemoryKind.MESSAGE]
    return [m.text for m in memory.list(user_id=user_id, filters={"kind": kinds, **filters})]


def test_re_adding_a_conversation_is_a_no_op(memory: Memory) -> None:
    first = memory.add(CONVERSATION, user_id="maya", session_id="s1", timestamp=T2021)
    assert not first.duplicates
    count = memory.stats(user_id="maya").memories
    assert memory.stats(user_id="maya").by_kind["message"] == 5  # the two "Thanks!" turns stay two turns
    assert {m.text for m in first.memories} == {"Maya lives in Boston.", "Maya's favourite food is sushi."}
    again = memory.add(CONVERSATION, user_id="maya", session_id="s1", timestamp=T2021)
    assert memory.stats(user_id="maya").memories == count
    assert again.duplicates == [it.id for it in first.items] and [it.id for it in again.items] == again.duplicates
    assert not again.added and not again.memories


def test_without_timestamps_a_re_add_is_still_a_no_op(memory: Memory) -> None:
    memory.add(CONVERSATION, user_id="maya", session_id="s1")
    count = memory.stats(user_id="maya").memories
    memory.add(CONVERSATION, user_id="maya", session_id="s1")
    assert memory.stats(user_id="maya").memories == count


def test_infer_false_stores_only_messages(memory: Memory) -> None:
    result = memory.add(CONVERSATION, user_id="maya", infer=False)
    assert not result.memories
    assert memory.stats(user_id="maya").by_kind == {"message": 5}


def test_the_same_fact_from_another_session_merges_its_sources(memory: Memory) -> None:
    a = memory.add("I live in Boston.", user_id="maya", session_id="s1", timestamp=T2021)
    b = memory.add("I live in Boston.", user_id="maya", session_id="s2", timestamp=T2021)
    assert typed(memory, "maya") == ["The user lives in Boston."]
    [fact] = memory.list(user_id="maya", filters={"kind": "fact"})
    assert [s.memory_id for s in fact.sources] == [a.items[0].id, b.items[0].id]
    assert [e.event for e in memory.history(fact.id, user_id="maya")] == [HistoryEvent.EXTRACT, HistoryEvent.MERGE]


def test_a_contradiction_supersedes_and_keeps_the_old_fact_queryable_by_time(memory: Memory) -> None:
    memory.add({"role": "user", "name": "Maya", "content": "I live in Boston."}, user_id="maya", timestamp=T2021)
    moved = memory.add(
        {"role": "user", "name": "Maya", "content": "I moved to Denver."}, user_id="maya", timestamp=T2023
    )
    [denver] = moved.memories
    [boston] = memory.list(user_id="maya", filters={"kind": "fact", "include_superseded": True, "until": T2023})
    assert boston.text == "Maya lives in Boston."
    assert boston.superseded_by == denver.id and boston.valid_until == T2023
    assert boston.valid_from == T2021 and denver.valid_until is None
    assert HistoryEvent.SUPERSEDE in [e.event for e in memory.history(boston.id, user_id="maya")]
    # current state: Denver only; as of mid-2022: Boston only
    assert typed(memory, "maya") == ["Maya moved to Denver."]
    assert typed(memory, "maya", as_of=datetime(2022, 6, 1, tzinfo=UTC)) == ["Maya lives in Boston."]
    current = memory.search("where does Maya live?", user_id="maya", filters={"kind": "fact"})
    assert [h.memory.id for h in current] == [denver.id]
    past = memory.search("where does Maya live?", user_id="maya", filters={"as_of": "2022-06-01", "kind": "fact"})
    assert [h.memory.id for h in past] == [boston.id]
    both = memory.search("Maya", user_id="maya", filters=Filters(include_superseded=True, kind=MemoryKind.FACT))
    assert {h.memory.id for h in both} == {boston.id, denver.id}
    # the raw messages are all still there
    assert memory.stats(user_id="maya").by_kind["message"] == 2


def test_eviction_keeps_typed_memories_at_capacity(tmp_path: Path, config: Config) -> None:
    cfg = config.with_(infer=True, capacity=3)
    with Memory(tmp_path / "cap.db", embedder=HashEmbedder(), config=cfg) as memory:
        foods = ["sushi", "ramen", "pizza", "tacos", "curry", "pasta"]
        for i, food in enumerate(foods):
            memory.add(f"My favourite {food} place is downtown {i}.", user_id="maya", infer=False)
            memory.add(f"I love {food}.", user_id="maya", session_id=f"s{i}")
        kinds = [k for k in MemoryKind if k is not MemoryKind.MESSAGE]
        alive = memory.list(user_id="maya", filters={"kind": kinds, "include_superseded": True})
        archived = memory.archive(user_id="maya")
        assert len(alive) == 3 and len(archived) == 3
        assert memory.stats(user_id="maya").by_kind["message"] == 12  # messages are never evicted by default
        gone = archived[0].memory
        assert [e.event for e in memory.history(gone.id, user_id="maya")][-1] is HistoryEvent.EVICT
        with pytest.raises(NotFoundError):
            memory.get(gone.id, user_id="maya")
        back = memory.restore(gone.id, user_id="maya")
        assert memory.get(gone.id, user_id="maya") == back
        assert any(h.memory.id == gone.id for h in memory.search(gone.text, user_id="maya", top_k=5))
        assert len(memory.archive(user_id="maya")) == 2
        assert memory.forget(user_id="maya", hard=True)  # over capacity again: the lowest goes for good
        assert len(memory.archive(user_id="maya")) == 2
        assert len(memory.list(user_id="maya", filters={"kind": kinds})) == 3


def test_deleting_a_message_cascades_to_what_was_extracted_from_it_alone(memory: Memory) -> None:
    a = memory.add("I live in Boston.", user_id="maya", session_id="s1", timestamp=T2021)
    b = memory.add("I live in Boston.", user_id="maya", session_id="s2", timestamp=T2021)
    c = memory.add("My favourite food is sushi.", user_id="maya", timestamp=T2021)
    [fact] = memory.list(user_id="maya", filters={"kind": "fact"})
    [pref] = memory.list(user_id="maya", filters={"kind": "preference"})
    assert memory.delete(c.items[0].id, user_id="maya") == [c.items[0].id, pref.id]
    with pytest.raises(NotFoundError):
        memory.get(pref.id, user_id="maya")
    memory.delete(a.items[0].id, user_id="maya")
    assert [s.memory_id for s in memory.get(fact.id, user_id="maya").sources] == [b.items[0].id]
    memory.delete(b.items[0].id, user_id="maya")
    assert memory.stats(user_id="maya").memories == 0


def test_tenant_isolation_of_extracted_memories_jobs_and_archive(memory: Memory) -> None:
    memory.add("I live in Boston.", user_id="maya", timestamp=T2021)
    queued = memory.add("I love sushi.", user_id="maya", async_mode=True)
    assert queued.job_id is not None
    memory.wait(queued.job_id, user_id="maya", timeout=30)
    assert typed(memory, "ben") == [] and memory.jobs(user_id="ben") == [] and memory.archive(user_id="ben") == []
    with pytest.raises(NotFoundError):
        memory.job(queued.job_id, user_id="ben")
    assert memory.search("Boston", user_id="ben") == []
    assert memory.delete_all(user_id="ben") == 0
    assert len(memory.jobs(user_id="maya")) == 2  # the synchronous add records its (done) job too


def test_delete_all_removes_jobs_and_archive(tmp_path: Path, config: Config) -> None:
    with Memory(":memory:", embedder=HashEmbedder(), config=config.with_(infer=True, capacity=1)) as memory:
        memory.add(["I love sushi.", "I love ramen."], user_id="maya")
        job = memory.add("I love pizza.", user_id="maya", async_mode=True).job_id
        assert job is not None
        memory.flush(timeout=30)
        assert memory.archive(user_id="maya") and memory.jobs(user_id="maya")
        memory.delete_all(user_id="maya")
        assert memory.archive(user_id="maya") == [] and memory.jobs(user_id="maya") == []
        assert memory.stats(user_id="maya").memories == 0


def test_validity_round_trips_through_export_and_import(memory: Memory, tmp_path: Path, config: Config) -> None:
    memory.add({"role": "user", "name": "Maya", "content": "I live in Boston."}, user_id="maya", timestamp=T2021)
    memory.add({"role": "user", "name": "Maya", "content": "I moved to Denver."}, user_id="maya", timestamp=T2023)
    buf = io.StringIO()
    n = memory.export(buf, user_id="maya")
    with Memory(":memory:", embedder=HashEmbedder(), config=config) as other:
        buf.seek(0)
        assert other.import_(buf, user_id="maya") == n
        everything = Filters(include_superseded=True)
        assert other.list(user_id="maya", filters=everything) == memory.list(user_id="maya", filters=everything)
        assert typed(other, "maya") == ["Maya moved to Denver."]


def test_the_same_words_at_another_time_are_another_turn(memory: Memory) -> None:
    memory.add("Good morning!", user_id="maya", session_id="s1", timestamp=T2021)
    again = memory.add("Good morning!", user_id="maya", session_id="s1", timestamp=T2023)
    other_session = memory.add("Good morning!", user_id="maya", session_id="s2", timestamp=T2021)
    assert not again.duplicates and not other_session.duplicates
    assert memory.stats(user_id="maya").by_kind == {"message": 3}


def test_messages_are_evicted_only_when_configured(config: Config) -> None:
    cfg = config.with_(infer=False, capacity=2, evict_messages=True)
    with Memory(":memory:", embedder=HashEmbedder(), config=cfg) as memory:
        memory.add(["one", "two", "three", "four"], user_id="maya")
        assert memory.stats(user_id="maya").memories == 2
        archived = {a.memory.text for a in memory.archive(user_id="maya")}
        kept = {m.text for m in memory.list(user_id="maya")}
        assert len(archived) == 2 and kept | archived == {"one", "two", "three", "four"}


def test_moving_back_makes_the_old_value_current_again(memory: Memory) -> None:
    for year, text in ((2019, "I live in Boston."), (2021, "I moved to Denver."), (2023, "I live in Boston.")):
        said = datetime(year, 1, 1, tzinfo=UTC)
        memory.add({"role": "user", "name": "Maya", "content": text}, user_id="maya", timestamp=said)
    assert typed(memory, "maya") == ["Maya lives in Boston."]
    assert typed(memory, "maya", as_of=datetime(2022, 1, 1, tzinfo=UTC)) == ["Maya moved to Denver."]
    assert typed(memory, "maya", as_of=datetime(2020, 1, 1, tzinfo=UTC)) == ["Maya lives in Boston."]
