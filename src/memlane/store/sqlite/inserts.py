"""New memory rows in SQLite: one at a time (``insert_row``) or an add's whole batch (``insert_rows``), and the
positions of new turns in their sessions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Final

import memlane.store.sqlite.text as text_sql
from memlane.embedding.base import Vectors
from memlane.models import HistoryEvent, MemoryItem, MemoryKind
from memlane.store.hot.rows import turn_label
from memlane.store.records import embed_hash
from memlane.store.sqlite.db import marks
from memlane.store.sqlite.entities import entity_rows, write_entities
from memlane.store.sqlite.history import log_events
from memlane.store.sqlite.rows import COLUMNS, MUTABLE, item_params
from memlane.store.sqlite.text import index_entry

_INSERT: Final = f"INSERT INTO memories ({COLUMNS}, embed_hash) VALUES ({', '.join('?' * (len(MUTABLE) + 3))})"
_INSERT_PK: Final = f"INSERT INTO memories (pk, {COLUMNS}, embed_hash)"
_ENTITY_ROWS: Final = "INSERT INTO memory_entities (pk, user_id, entity, said_by)"
_ENTITY_UPSERT: Final = " ON CONFLICT(pk, entity) DO UPDATE SET said_by = excluded.said_by"


def insert_row(c: sqlite3.Connection, item: MemoryItem, body: str, vec: Vectors, *, text_entry: bool = True) -> int:
    """Insert a memory with its entity rows, vector and (unless ``text_entry`` is false) text entry; its row key.

    A caller inserting many rows writes their text entries last, one after another (``index_entry``): FTS5 flushes
    its pending terms to new index segments at every statement savepoint of the transaction (a write with a
    trigger or a constraint opens one), so entries interleaved with other writes cost a segment each.
    """
    cur = c.execute(_INSERT, item_params(item, embed_hash(body)))
    pk = int(cur.lastrowid or 0)
    write_entities(c, pk, item)
    c.execute("INSERT INTO vectors (pk, user_id, vec) VALUES (?, ?, ?)", (pk, item.user_id, vec.tobytes()))
    if text_entry:
        index_entry(c, pk, item, body)
    return pk


def insert_rows(
    c: sqlite3.Connection,
    items: Sequence[MemoryItem],
    bodies: Sequence[str],
    vecs: Vectors,
    event: HistoryEvent,
    changes: Mapping[str, Mapping[str, Any]],
    first_new: Mapping[tuple[str, str | None], int],
) -> list[int]:
    """Insert new memories (none superseded) with their entity rows, vectors, history and text entries: one
    statement per table for the whole batch, text entries last. Their row keys, in order.

    Each row gets the key SQLite would give it (one more than the largest), so the rows are those ``insert_row``
    writes one by one. ``first_new`` holds the first position just given in each (user, session): a turn after
    one of this batch takes that turn's text as its context without reading it back.
    """
    if not items:
        return []
    top = int(c.execute("SELECT max(pk) FROM memories").fetchone()[0] or 0)
    pks = list(range(top + 1, top + 1 + len(items)))
    insert_all(
        c,
        _INSERT_PK,
        [(pk, *item_params(item, embed_hash(body))) for pk, item, body in zip(pks, items, bodies, strict=True)],
    )
    c.execute("DELETE FROM memory_entities WHERE pk > ?", (top,))  # rows of a new key: only an orphan's
    entities = [row for pk, item in zip(pks, items, strict=True) for row in entity_rows(pk, item)]
    insert_all(c, _ENTITY_ROWS, entities, _ENTITY_UPSERT)
    insert_all(
        c,
        "INSERT INTO vectors (pk, user_id, vec)",
        [(pk, item.user_id, vec.tobytes()) for pk, item, vec in zip(pks, items, vecs, strict=True)],
    )
    log_events(
        c,
        [
            (item.user_id, item.id, event, item.created_at, None, item.text, dict(changes.get(item.id, {})))
            for item in items
        ],
    )
    turns: dict[tuple[str, str | None, int], list[MemoryItem]] = {}
    for item in items:
        if item.kind == MemoryKind.MESSAGE and item.position is not None:
            turns.setdefault((item.user_id, item.session_id, item.position), []).append(item)
    entries = []
    for pk, item, body in zip(pks, items, bodies, strict=True):
        ctx = _batch_context(item, turns, first_new)
        ctx = text_sql.previous_turn(c, item) if ctx is None else ctx
        entries.append((pk, body, ctx, text_sql.scope_token(item.user_id)))
    # together, one row per statement (FTS5 has no trigger, so none opens a statement journal): one FTS5 flush
    c.executemany("INSERT INTO memories_fts (rowid, body, ctx, scope) VALUES (?, ?, ?, ?)", entries)
    return pks


def insert_all(c: sqlite3.Connection, head: str, rows: Sequence[tuple[Any, ...]], tail: str = "") -> None:
    """``head VALUES (...), (...), ... tail`` over ``rows``: as many rows per statement as SQLite's bound-parameter
    limit allows, inserted in order (row triggers fire row by row, in that order, as with one statement per row).

    For a table with a trigger (the fact and vector logs): each statement that fires one keeps the original of
    every page it changes in a statement journal (a temporary file once past 64 KiB of a transaction) and loads and
    saves its log's AUTOINCREMENT counter. One statement per row (``executemany``) does so for every index leaf each
    row touches: 27 file writes a row for batches of 500 memories, against 1.3 with one statement per batch, and a
    third of the CPU time for the memories, vectors and entity rows of the 10k scale corpus.
    """
    if not rows:
        return
    width = len(rows[0])
    per = max(1, c.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
    one = f"({marks(width)})"
    for start in range(0, len(rows), per):
        part = rows[start : start + per]
        c.execute(f"{head} VALUES {', '.join([one] * len(part))}{tail}", [v for row in part for v in row])


def _batch_context(
    item: MemoryItem,
    turns: Mapping[tuple[str, str | None, int], list[MemoryItem]],
    first_new: Mapping[tuple[str, str | None], int],
) -> str | None:
    """The previous turn's text when it is a turn of this batch and no stored row can share its position (it
    was numbered after every stored one); ``None`` to read it from the store (``previous_turn``).
    """
    if item.kind != MemoryKind.MESSAGE or not item.position:
        return None
    first = first_new.get((item.user_id, item.session_id))
    if first is None or item.position - 1 < first:
        return None
    previous = turns.get((item.user_id, item.session_id, item.position - 1), [])
    if len(previous) != 1:
        return None if previous else ""
    before = previous[0]  # only a reply (another role or speaker) takes it: ``turn_label``
    return before.text if turn_label(before.role, before.speaker) != turn_label(item.role, item.speaker) else ""


def number_turns(c: sqlite3.Connection, items: Sequence[MemoryItem]) -> dict[tuple[str, str | None], int]:
    """Give each unnumbered message the next position of its session (in place); the first position given in each
    (user, session).

    The next position follows the largest of the session stored so far and of the items before it in ``items``,
    as when the items are inserted one after another and each reads the largest when it is first needed.
    """
    last: dict[tuple[str, str | None], int] = {}
    earlier: dict[tuple[str, str | None], int] = {}  # the largest position of the items so far, per session
    first: dict[tuple[str, str | None], int] = {}
    for item in items:
        key = (item.user_id, item.session_id)
        if item.position is None and item.kind == MemoryKind.MESSAGE:
            if key not in last:
                row = c.execute(
                    "SELECT max(position) FROM memories WHERE user_id = ? AND session_id IS ?",
                    (item.user_id, item.session_id),
                ).fetchone()
                last[key] = max(-1 if row[0] is None else int(row[0]), earlier.get(key, -1))
            last[key] += 1
            item.position = last[key]
            first.setdefault(key, item.position)
        elif item.position is not None and key not in last:
            earlier[key] = max(earlier.get(key, -1), item.position)
    return first
