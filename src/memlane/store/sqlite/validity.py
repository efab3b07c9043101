"""Which stored messages stated a claim that a later memory superseded: written with the supersession, read per pool."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memlane.models import MemoryItem, MemoryKind
from memlane.store.records import Contradiction
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import from_micros, to_micros


def mark_contradicted(c: sqlite3.Connection, item: MemoryItem) -> int:
    """Inside the caller's transaction: when ``item`` (a typed memory) has just been superseded, link the messages
    it was distilled from to the memory that superseded it. Returns how many links were written.
    """
    if item.kind is MemoryKind.MESSAGE or not item.superseded_by or item.valid_until is None:
        return 0
    since = to_micros(item.valid_until)
    written = 0
    for source in item.sources:
        row = c.execute(
            "SELECT 1 FROM memories WHERE user_id = ? AND id = ? AND kind = ?",
            (item.user_id, source.memory_id, MemoryKind.MESSAGE.value),
        ).fetchone()
        if row is None:
            continue
        c.execute(
            "INSERT INTO contradictions (user_id, memory_id, superseded, contradicted_by, since) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(user_id, memory_id, superseded) DO UPDATE SET contradicted_by = excluded.contradicted_by, "
            "since = excluded.since",
            (item.user_id, source.memory_id, item.id, item.superseded_by, since),
        )
        written += 1
    return written


def forget_links(c: sqlite3.Connection, user_id: str, memory_id: str) -> None:
    """Inside the caller's transaction: drop every link that names a deleted memory, on either side."""
    c.execute(
        "DELETE FROM contradictions WHERE user_id = ? AND (memory_id = ? OR superseded = ? OR contradicted_by = ?)",
        (user_id, memory_id, memory_id, memory_id),
    )


class SQLiteValidity:
    """The ``ValidityIndex`` capability over the ``contradictions`` table."""

    _db: Database

    def contradicted(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Contradiction]:
        out: dict[str, Contradiction] = {}
        # Most scopes have no link at all: one primary-key probe (about 10 µs) instead of binding a pool of ids.
        if not memory_ids or not self._db.read("SELECT 1 FROM contradictions WHERE user_id = ? LIMIT 1", (user_id,)):
            return out
        rows = self._db.read_in(
            "SELECT memory_id, superseded, contradicted_by, since FROM contradictions "
            "WHERE user_id = ? AND memory_id IN ({marks}) ORDER BY since",
            memory_ids,
            (user_id,),
        )
        for memory_id, old, new, since in rows:
            # the earliest supersession is when the message stopped being current
            out.setdefault(str(memory_id), Contradiction(str(memory_id), str(old), str(new), from_micros(int(since))))
        return out
