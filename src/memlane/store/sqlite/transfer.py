"""What a whole-store copy reads and writes in SQLite (``StoreTransfer``): users, index entries, history, graph
relations, injection flags and sealed originals.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from memlane.store.records import StoredEntry
from memlane.store.sql.dialect import SQLITE, Dialect
from memlane.store.sql.history import HistoryLog
from memlane.store.sql.transfer import SQLTransfer
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.history import HISTORY_LOG


class SQLiteTransfer(SQLTransfer[Database]):
    """The ``StoreTransfer`` capability: the shared part (``memlane.store.sql.transfer``) and this backend's users
    and index entries.
    """

    _dialect: ClassVar[Dialect] = SQLITE
    _history_log: ClassVar[HistoryLog] = HISTORY_LOG

    def user_ids(self) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT user_id FROM (SELECT user_id, min(pk) AS o FROM memories GROUP BY user_id "
            "UNION ALL SELECT user_id, 1e18 + min(pk) FROM archive GROUP BY user_id "
            "UNION ALL SELECT user_id, 2e18 + min(seq) FROM history GROUP BY user_id "
            "UNION ALL SELECT user_id, 3e18 + min(seq) FROM feedback GROUP BY user_id "
            "UNION ALL SELECT user_id, 4e18 + min(seq) FROM jobs GROUP BY user_id "
            "UNION ALL SELECT user_id, 5e18 FROM memory_flags GROUP BY user_id "
            "UNION ALL SELECT user_id, 5e18 FROM pii_originals GROUP BY user_id) GROUP BY user_id ORDER BY min(o), user_id"
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
