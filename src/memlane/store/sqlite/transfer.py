"""What a whole-store copy reads and writes in SQLite (``StoreTransfer``): users, index entries, history."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence

import numpy as np

from memlane.models import HistoryEntry
from memlane.store.records import StoredEntry
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import to_micros


class SQLiteTransfer:
    """The ``StoreTransfer`` capability over the shared ``Database``."""

    _db: Database

    def user_ids(self) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT user_id FROM (SELECT user_id, min(pk) AS o FROM memories GROUP BY user_id "
            "UNION ALL SELECT user_id, 1e18 + min(pk) FROM archive GROUP BY user_id "
            "UNION ALL SELECT user_id, 2e18 + min(seq) FROM history GROUP BY user_id "
            "UNION ALL SELECT user_id, 3e18 + min(seq) FROM feedback GROUP BY user_id "
            "UNION ALL SELECT user_id, 4e18 + min(seq) FROM jobs GROUP BY user_id) GROUP BY user_id ORDER BY min(o)"
        )
        return [str(r[0]) for r in rows]

    def stored_entries(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, StoredEntry]:
        live = self._db.read_in(
            "SELECT m.id, f.body, v.vec FROM memories m JOIN memories_fts f ON f.rowid = m.pk "
            "JOIN vectors v ON v.pk = m.pk WHERE +m.user_id = ? AND m.id IN ({marks})",
            memory_ids,
            before=(user_id,),
        )
        archived = self._db.read_in(
            "SELECT id, body, vec FROM archive WHERE user_id = ? AND id IN ({marks})", memory_ids, before=(user_id,)
        )
        return {
            str(mid): StoredEntry(str(body), np.frombuffer(vec, dtype=np.float32).copy())
            for mid, body, vec in (*archived, *live)
        }

    def history_ids(self, user_id: str) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT memory_id FROM history WHERE user_id = ? GROUP BY memory_id ORDER BY min(seq)", (user_id,)
        )
        return [str(r[0]) for r in rows]

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        with self._db.atomic() as c:
            c.execute("DELETE FROM history WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
            c.executemany(
                "INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        memory_id,
                        user_id,
                        e.event.value,
                        to_micros(e.at),
                        e.old_text,
                        e.new_text,
                        json.dumps(e.changes, default=str),
                    )
                    for e in entries
                ],
            )
