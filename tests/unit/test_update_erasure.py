"""An ``update`` that rewrites a memory's text erases what was derived from the old text, as ``delete`` does: the
typed memories distilled from it alone, their entities, relations and aliases. Search, context and the graph no
longer return the old facts or words.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import Config, Memory, MemoryKind
from memlane.embedding.fake import HashEmbedder
from memlane.errors import NotFoundError


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    config = Config(data_dir=tmp_path / "home", embedder="hash", infer=True, background_worker=False)
    m = Memory(tmp_path / "m.db", embedder=HashEmbedder(), config=config)
    yield m
    m.close()


def test_a_rewrite_drops_the_typed_memories_entities_and_relations_of_the_old_text(memory: Memory) -> None:
    turn = memory.add("My brother Tom lives in Porto.", user_id="u").items[0]
    typed = [it for it in memory.list(user_id="u") if it.kind is not MemoryKind.MESSAGE]
    assert typed and all(it.sources[0].memory_id == turn.id for it in typed)  # the premise: facts were derived
    assert memory.graph("Tom", user_id="u").relations

    memory.update(turn.id, user_id="u", text="My wifi password was changed")

    assert [(it.kind, it.text) for it in memory.list(user_id="u")] == [
        (MemoryKind.MESSAGE, "My wifi password was changed")
    ]
    with pytest.raises(NotFoundError):
        memory.graph("Tom", user_id="u")
    for query in ("Tom brother Porto", "who is the user's brother?"):
        hits = memory.search(query, user_id="u", top_k=10)
        assert all("Tom" not in h.memory.text and "Porto" not in h.memory.text for h in hits)
        assert "Tom" not in memory.context(query, user_id="u").text
    for it in typed:  # the derived copies are gone from every index, their history says why
        with pytest.raises(NotFoundError):
            memory.get(it.id, user_id="u")
        assert any(e.changes.get("source_rewritten") == turn.id for e in memory.history(it.id, user_id="u"))


def test_a_typed_memory_with_another_source_only_loses_the_rewritten_one(memory: Memory) -> None:
    first = memory.add("My brother Tom lives in Porto.", user_id="u").items[0]
    memory.add("My brother Tom lives in Porto.", user_id="u", session_id="again")
    shared = [it for it in memory.list(user_id="u") if it.kind is not MemoryKind.MESSAGE and len(it.sources) > 1]
    assert shared  # the premise: a fact drawn from both turns
    memory.update(first.id, user_id="u", text="Nothing to see here")
    for it in shared:
        kept = memory.get(it.id, user_id="u")
        assert first.id not in [s.memory_id for s in kept.sources] and kept.sources


def test_metadata_only_updates_keep_the_derived_memories(memory: Memory) -> None:
    turn = memory.add("My brother Tom lives in Porto.", user_id="u").items[0]
    before = [it.id for it in memory.list(user_id="u")]
    memory.update(turn.id, user_id="u", metadata={"k": "v"})
    memory.update(turn.id, user_id="u", text="My brother Tom lives in Porto.")  # the same text: nothing to erase
    assert [it.id for it in memory.list(user_id="u")] == before
