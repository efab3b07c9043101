"""The archive: evicted memories kept whole (row, text body, vector) out of every index, and restorable."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from memlane.errors import NotFoundError
from memlane.models import ArchivedMemory, HistoryEvent, MemoryItem
from memlane.store.postgres.db import Database
from memlane.store.postgres.history import log_event
from memlane.store.postgres.rows import SELECTED, as_array, run
from memlane.store.postgres.text import refresh_next_context, turn_of
from memlane.store.postgres.writes import insert_row, remove_row
from memlane.store.sql.rows import from_micros, row_to_item, to_micros

_N: Final = len(SELECTED.split(","))


class PostgresArchive:
    """Eviction to the archive (or destruction), listing and restore."""

    _db: Database

    def evict(self, user_id: str, memory_ids: Sequence[str], at: datetime, *, hard: bool = False) -> int:
        """Move memories out of every index into the archive (or destroy them when ``hard``), logging EVICT."""
        if not memory_ids:
            return 0
        moved = 0
        with self._db.atomic(user_id) as c:
            for mid in dict.fromkeys(memory_ids):
                row = run(
                    c,
                    f"SELECT m.pk, {SELECTED}, m.body, m.vec FROM memories m WHERE m.user_id = %s AND m.id = %s "
                    "FOR UPDATE",
                    (user_id, mid),
                ).fetchone()
                if row is None:
                    continue
                pk, item, body, vec = int(row[0]), row_to_item(row[1 : _N + 1]), row[-2], row[-1]
                if hard:
                    remove_row(c, user_id, pk, mid, at, {"evicted": True, "hard": True})
                else:
                    run(
                        c,
                        "INSERT INTO archive (id, user_id, kind, item, body, vec, archived_at, reason) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                        (mid, user_id, item.kind.value, item.model_dump_json(), body, vec, to_micros(at), "capacity"),
                    )
                    turn = turn_of(c, pk)
                    run(c, "DELETE FROM memories WHERE pk = %s", (pk,))
                    refresh_next_context(c, turn)
                    log_event(c, user_id, mid, HistoryEvent.EVICT, at, changes={"archived": True})
                moved += 1
        return moved

    def archived(self, user_id: str, limit: int, offset: int) -> builtins.list[ArchivedMemory]:
        rows = self._db.read(
            "SELECT item, archived_at, reason FROM archive WHERE user_id = %s ORDER BY archived_at DESC, pk DESC "
            "LIMIT %s OFFSET %s",
            (user_id, limit, offset),
            scope=user_id,
        )
        return [
            ArchivedMemory(memory=MemoryItem.model_validate_json(r[0]), archived_at=from_micros(int(r[1])), reason=r[2])
            for r in rows
        ]

    def restore(self, user_id: str, memory_id: str, at: datetime) -> MemoryItem:
        """Bring an archived memory back into every index, logging RESTORE."""
        with self._db.atomic(user_id) as c:
            row = run(
                c,
                "SELECT pk, item, body, vec FROM archive WHERE user_id = %s AND id = %s FOR UPDATE",
                (user_id, memory_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no archived memory {memory_id!r} for user {user_id!r}")
            item = MemoryItem.model_validate_json(row[1])
            pk = insert_row(c, item, str(row[2]), as_array(row[3]))
            refresh_next_context(c, turn_of(c, pk))  # the next turn's context has its words again
            run(c, "DELETE FROM archive WHERE pk = %s", (int(row[0]),))
            log_event(c, user_id, memory_id, HistoryEvent.RESTORE, at)
        return item
