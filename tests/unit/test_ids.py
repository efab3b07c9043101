"""Memory ids sort in the order they were made, so ranking ties (broken by id) order the same way in every run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memlane import Memory, Message
from memlane.config import Config
from memlane.ids import new_id


def test_ids_are_unique_hex_and_sort_in_creation_order() -> None:
    ids = [new_id() for _ in range(5_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert ids == sorted(ids)


def test_equal_scores_order_by_creation_in_every_store(tmp_path: Path) -> None:
    when = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    orders = []
    for run in range(3):
        with Memory(tmp_path / f"run{run}.db", embedder="hash", config=Config(embedder="hash", infer=False)) as m:
            # The same words twice in one batch are two memories (the second is not a duplicate write).
            batch = [
                Message(role="user", content="The kettle is in the left cupboard.", timestamp=when, metadata={"n": n})
                for n in range(4)
            ]
            m.add(batch, user_id="ana", session_id="s")
            hits = m.search("where is the kettle?", user_id="ana", top_k=4, preset_name="dense")
            assert len({h.score for h in hits}) == 1  # all tied
            orders.append([h.memory.metadata["n"] for h in hits])
    assert orders == [[0, 1, 2, 3]] * 3
