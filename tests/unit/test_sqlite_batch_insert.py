"""An add's batch insert writes exactly the rows that inserting the memories one by one writes: keys, positions,
entity rows, vectors, history and text entries (with the previous turn's words as context)."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memlane.models import HistoryEvent, MemoryItem, MemoryKind
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.history import log_event
from memlane.store.sqlite.inserts import insert_row, insert_rows, number_turns
from memlane.store.sqlite.text import index_entry

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def _item(
    k: int, session: str | None, *, position: int | None = None, kind: MemoryKind = MemoryKind.MESSAGE
) -> MemoryItem:
    return MemoryItem(
        id=uuid.UUID(int=k).hex,
        user_id="u" if k % 5 else "v",
        session_id=session,
        kind=kind,
        role="user",
        speaker="Ann" if k % 2 else None,
        text=f"turn {k} about Bob and my sister",
        timestamp=T0 + timedelta(minutes=k),
        created_at=T0,
        updated_at=T0,
        content_hash=f"h{k}",
        position=position,
        entities=["ann", "bob"] if k % 2 else ["bob", "my sister", "bob"],
    )


def _batches() -> list[list[MemoryItem]]:
    first = [_item(k, "s1" if k % 3 else "s2") for k in range(1, 9)]
    # a turn numbered by its caller among new ones, a typed memory without position, another session
    second = [_item(20, "s1"), _item(21, "s1", position=40), _item(22, "s1"), _item(23, None)]
    second += [_item(24, "s1", kind=MemoryKind.FACT), _item(25, "s3", position=0), _item(26, "s3")]
    return [first, second]


def _dump(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for table in ("memories", "memory_entities", "vectors", "history", "vector_log"):
        out[table] = db.read(f"SELECT * FROM {table} ORDER BY 1, 2")
    out["memories_fts"] = db.read("SELECT rowid, body, ctx, scope FROM memories_fts ORDER BY rowid")
    out["fact_log"] = db.read("SELECT user_id, pk FROM fact_log ORDER BY user_id, pk")  # order within a write: free
    return out


def _store(path: Path) -> Database:
    from memlane.store.sqlite import SQLiteStore

    SQLiteStore(path).close()  # migrated
    return Database(path)


def test_batch_insert_writes_the_rows_of_one_by_one_inserts(tmp_path: Path) -> None:
    one, batch = _store(tmp_path / "one.db"), _store(tmp_path / "batch.db")
    rng = np.random.default_rng(0)
    for items in _batches():
        vecs = rng.standard_normal((len(items), 8)).astype(np.float32)
        bodies = [f"{it.text} body" for it in items]
        copies = [it.model_copy(deep=True) for it in items]
        with one.atomic() as c:
            number_turns(c, copies)
            pks = [insert_row(c, it, b, v, text_entry=False) for it, b, v in zip(copies, bodies, vecs, strict=True)]
            for it in copies:
                log_event(c, it.user_id, it.id, HistoryEvent.ADD, it.created_at, None, it.text, {})
            for pk, it, b in zip(pks, copies, bodies, strict=True):
                index_entry(c, pk, it, b)
        with batch.atomic() as c:
            first_new = number_turns(c, items)
            assert insert_rows(c, items, bodies, vecs, HistoryEvent.ADD, {}, first_new) == pks
        assert [it.position for it in items] == [it.position for it in copies]
    assert _dump(batch) == _dump(one)
    # v's second s1 turn (20) follows its first (5), read from the store; u's caller-numbered turn (21, position
    # 40) is kept, and u's next new turn (22) follows it, with its words as context
    positions = dict(batch.read("SELECT id, position FROM memories"))
    assert positions[uuid.UUID(int=20).hex] == 1 and positions[uuid.UUID(int=22).hex] == 41
    ctx = dict(batch.read("SELECT m.id, f.ctx FROM memories m JOIN memories_fts f ON f.rowid = m.pk"))
    assert ctx[uuid.UUID(int=20).hex] == "turn 5 about Bob and my sister"
    assert ctx[uuid.UUID(int=22).hex] == "turn 21 about Bob and my sister"


def test_number_turns_follows_positions_given_earlier_in_the_batch(tmp_path: Path) -> None:
    db = _store(tmp_path / "n.db")
    items = [_item(1, "s", position=7), _item(2, "s"), _item(3, "s", position=2), _item(4, "s")]
    with db.atomic() as c:
        assert number_turns(c, items) == {("u", "s"): 8}
    assert [it.position for it in items] == [7, 8, 2, 9]
    with sqlite3.connect(tmp_path / "n.db") as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_batch_insert_in_many_statements_writes_the_rows_of_one(tmp_path: Path) -> None:
    # A low bound-parameter limit splits each table's rows over many multi-row statements: the same rows, and the
    # logs the triggers write (fact and vector logs) in the same order.
    whole, split = _store(tmp_path / "whole.db"), _store(tmp_path / "split.db")
    split.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 70)  # two memory rows, 17 entity rows a statement
    rng = np.random.default_rng(1)
    for items in _batches():
        vecs = rng.standard_normal((len(items), 8)).astype(np.float32)
        bodies = [f"{it.text} body" for it in items]
        for db, batch in ((whole, [it.model_copy(deep=True) for it in items]), (split, items)):
            with db.atomic() as c:
                insert_rows(c, batch, bodies, vecs, HistoryEvent.ADD, {}, number_turns(c, batch))
    assert _dump(split) == _dump(whole)
    for table in ("fact_log", "vector_log"):
        assert split.read(f"SELECT * FROM {table} ORDER BY seq") == whole.read(f"SELECT * FROM {table} ORDER BY seq")
    assert len(whole.read("SELECT * FROM fact_log")) == len(_dump(whole)["memories"]) + len(
        _dump(whole)["memory_entities"]
    )
