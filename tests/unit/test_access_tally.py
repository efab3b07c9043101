"""Searches' access counts are gathered in memory and written in batches, before anything reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memlane import Memory
from memlane.embedding.fake import HashEmbedder
from memlane.lifecycle.access import AccessTally
from memlane.store.records import AccessUse

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def test_the_tally_counts_uses_keeps_the_latest_time_and_drains_empty() -> None:
    tally = AccessTally(max_pending=3, max_age_s=3600)
    assert not tally
    assert not tally.note("u", ["a", "b"], T0)
    assert not tally.note("u", ["a"], T0 + timedelta(seconds=5))
    assert tally.note("v", ["a"], T0)  # three distinct (user, memory) pairs: due
    assert tally.drain() == {
        "u": {"a": AccessUse(2, T0 + timedelta(seconds=5)), "b": AccessUse(1, T0)},
        "v": {"a": AccessUse(1, T0)},
    }
    assert not tally and tally.drain() == {}


def test_the_tally_is_due_once_the_oldest_use_has_waited() -> None:
    tally = AccessTally(max_pending=1000, max_age_s=0.0)
    assert tally.note("u", ["a"], T0)


def _counts(path: Path) -> dict[str, int]:
    with Memory(path, embedder=HashEmbedder()) as other:  # another process's view of the file
        return {item.text: item.access_count for item in other.list(user_id="ana")}


def test_searches_write_nothing_until_a_read_or_close(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, embedder=HashEmbedder()) as m:
        m.add(["I adopted a beagle", "I play the trumpet"], user_id="ana", session_id="s", infer=False)
        for _ in range(3):
            assert m.search("beagle", user_id="ana", top_k=1)[0].memory.text == "I adopted a beagle"
        assert _counts(path) == {"I adopted a beagle": 0, "I play the trumpet": 0}  # gathered, not written yet
        assert {i.text: i.access_count for i in m.list(user_id="ana")}["I adopted a beagle"] == 3  # written first
        m.search("trumpet", user_id="ana", top_k=1)
    assert _counts(path) == {"I adopted a beagle": 3, "I play the trumpet": 1}  # close wrote the rest


def test_counts_gathered_for_a_deleted_memory_are_dropped_quietly(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=HashEmbedder()) as m:
        m.add(["I adopted a beagle"], user_id="ana", session_id="s", infer=False)
        hit = m.search("beagle", user_id="ana", top_k=1)[0]
        m._access.note("ana", [hit.memory.id], T0)  # pending when the delete comes
        m.delete_all(user_id="ana")
        assert not m._access
        assert m.list(user_id="ana") == []
