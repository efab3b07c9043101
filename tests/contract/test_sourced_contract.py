"""The memories read from given turns, on every backend: matched in the store by their sources, of the kinds asked,
superseded ones included, oldest first; and a job's result built on it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from memlane import Memory
from memlane.models import TYPED_KINDS, MemoryKind, SourceRef


def test_sourced_from_matches_the_sources_in_the_store(memory: Memory) -> None:
    turns = memory.add(["first turn", "second turn", "third turn"], user_id="u", infer=False).items
    a, b, c = (t.id for t in turns)
    base = datetime(2022, 5, 1, tzinfo=UTC)
    specs = [  # id, kind, sources, superseded
        ("x1", MemoryKind.FACT, [a], False),
        ("x2", MemoryKind.PREFERENCE, [b, c], True),
        ("x3", MemoryKind.FACT, [c], False),
        ("x4", MemoryKind.EVENT, [], False),
        ("x5", MemoryKind.PLAN, [a, "gone"], False),
    ]
    items = [
        turns[0].model_copy(
            update={
                "id": mid,
                "kind": kind,
                "text": f"typed {mid}",
                "content_hash": f"h-{mid}",
                "timestamp": base + timedelta(minutes=5 - i),  # oldest first means x5 first
                "sources": [SourceRef(memory_id=s) for s in sources],
                "valid_until": base if old else None,
                "superseded_by": "x1" if old else None,
            }
        )
        for i, (mid, kind, sources, old) in enumerate(specs)
    ]
    store = memory._store
    store.insert(items, [i.text for i in items], np.vstack(memory.embedder.embed([i.text for i in items])))
    found = store.sourced_from("u", [a, b], TYPED_KINDS)
    assert [m.id for m in found] == ["x5", "x2", "x1"]
    assert [m.id for m in store.sourced_from("u", [c], [MemoryKind.FACT])] == ["x3"]
    assert store.sourced_from("u", [a], [MemoryKind.MESSAGE]) == []
    assert store.sourced_from("other", [a, b, c], TYPED_KINDS) == []
    assert store.sourced_from("u", [], TYPED_KINDS) == []


def test_a_jobs_result_is_what_it_wrote(memory: Memory) -> None:
    job_id = memory.add(["My sister Mel lives in Denver."], user_id="u", infer=True, async_mode=True).job_id
    assert job_id
    memory.wait(job_id, user_id="u", timeout=60)
    result = memory.job_result(job_id)
    wanted = set(result.job.payload["message_ids"])
    assert result.memories, "the rule extractor reads a fact from this message"
    assert all(m.kind in TYPED_KINDS and wanted & {s.memory_id for s in m.sources} for m in result.memories)
    every = memory.list(user_id="u", filters={"include_superseded": True}, limit=100)
    assert {m.id for m in result.memories} == {
        m.id for m in every if m.kind in TYPED_KINDS and wanted & {s.memory_id for s in m.sources}
    }
