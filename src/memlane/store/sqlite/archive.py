"""The archive: evicted memories kept whole (row, text entry, vector) out of every index, and restorable."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Final

import numpy as np

from memlane.errors import NotFoundError
from memlane.models import ArchivedMemory, HistoryEvent, MemoryItem
from memlane.store.sqlite.ann_feed import AnnIndexes
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.history import log_event
from memlane.store.sqlite.inserts import insert_row
from memlane.store.sqlite.rows import COLUMNS, from_micros, row_to_item, to_micros
from memlane.store.sqlite.text import drop_entry, refresh_next_context, turn_of
from memlane.store.sqlite.writes import remove_row

_QUALIFIED: Final = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))


class SQLiteArchive:
    """Eviction to the archive (or destruction), listing and restore."""

    _db: Database
    _cache: AnnIndexes

    def evict(self, user_id: str, memory_ids: Sequence[str], at: datetime, *, hard: bool = False) -> int:
        """Move memories out of every index into the archive (or destroy them when ``hard``), logging EVICT."""
        if not memory_ids:
            return 0
        moved: list[int] = []
        with self._db.atomic() as c:
            for mid in dict.fromkeys(memory_ids):
                row = c.execute(
                    f"SELECT m.pk, {_QUALIFIED}, f.body, v.vec FROM memories m JOIN vectors v ON v.pk = m.pk "
                    "JOIN memories_fts f ON f.rowid = m.pk WHERE +m.user_id = ? AND m.id = ?",
                    (user_id, mid),
                ).fetchone()
                if row is None:
                    continue
                pk, item, body, vec = int(row[0]), row_to_item(row[1:-2]), row[-2], row[-1]
                if hard:
                    remove_row(c, user_id, pk, mid, at, {"evicted": True, "hard": True})
                else:
                    c.execute(
                        "INSERT INTO archive (id, user_id, kind, item, body, vec, archived_at, reason) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (mid, user_id, item.kind.value, item.model_dump_json(), body, vec, to_micros(at), "capacity"),
                    )
                    turn = turn_of(c, pk)
                    drop_entry(c, pk)
                    c.execute("DELETE FROM memories WHERE pk = ?", (pk,))
                    refresh_next_context(c, turn)
                    log_event(c, user_id, mid, HistoryEvent.EVICT, at, changes={"archived": True})
                moved.append(pk)
            versions = self._db.bump(c, user_id)
        self._cache.advance(user_id, *versions, remove=moved)
        if moved:
            self._cache.erased(user_id)  # archived vectors live in the archive table only
        return len(moved)

    def archived(self, user_id: str, limit: int, offset: int) -> builtins.list[ArchivedMemory]:
        rows = self._db.read(
            "SELECT item, archived_at, reason FROM archive WHERE user_id = ? ORDER BY archived_at DESC, pk DESC "
            "LIMIT ? OFFSET ?",
            (user_id, limit, offset),
        )
        return [
            ArchivedMemory(memory=MemoryItem.model_validate_json(r[0]), archived_at=from_micros(int(r[1])), reason=r[2])
            for r in rows
        ]

    def restore(self, user_id: str, memory_id: str, at: datetime) -> MemoryItem:
        """Bring an archived memory back into every index, logging RESTORE."""
        with self._db.atomic() as c:
            row = c.execute(
                "SELECT pk, item, body, vec FROM archive WHERE user_id = ? AND id = ?", (user_id, memory_id)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no archived memory {memory_id!r} for user {user_id!r}")
            item = MemoryItem.model_validate_json(row[1])
            vec = np.frombuffer(row[3], dtype=np.float32)
            pk = insert_row(c, item, str(row[2]), vec)
            refresh_next_context(c, turn_of(c, pk))  # the next turn's context has its words again
            c.execute("DELETE FROM archive WHERE pk = ?", (int(row[0]),))
            log_event(c, user_id, memory_id, HistoryEvent.RESTORE, at)
            versions = self._db.bump(c, user_id)
        self._cache.advance(user_id, *versions, add=([pk], [memory_id], vec.reshape(1, -1)))
        return item
