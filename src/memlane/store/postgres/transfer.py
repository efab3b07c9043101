"""What a whole-store copy reads and writes in PostgreSQL (``StoreTransfer``): users, index entries, history, graph
relations, injection flags and sealed originals.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import ClassVar

from memlane.store.postgres.db import Database
from memlane.store.postgres.history import HISTORY_LOG
from memlane.store.postgres.rows import as_array, run
from memlane.store.records import StoredEntry
from memlane.store.sql.dialect import POSTGRES, Dialect
from memlane.store.sql.history import HistoryLog
from memlane.store.sql.transfer import SQLTransfer


class PostgresTransfer(SQLTransfer[Database]):
    """The ``StoreTransfer`` capability: the shared part (``memlane.store.sql.transfer``) and this backend's users
    and index entries.
    """

    _dialect: ClassVar[Dialect] = POSTGRES
    _history_log: ClassVar[HistoryLog] = HISTORY_LOG

    def user_ids(self) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT user_id FROM (SELECT user_id, 0 AS t, min(pk) AS o FROM memories GROUP BY user_id "
            "UNION ALL SELECT user_id, 1, min(pk) FROM archive GROUP BY user_id "
            "UNION ALL SELECT user_id, 2, min(seq) FROM history GROUP BY user_id "
            "UNION ALL SELECT user_id, 3, min(seq) FROM feedback GROUP BY user_id "
            "UNION ALL SELECT user_id, 4, min(seq) FROM jobs GROUP BY user_id "
            "UNION ALL SELECT user_id, 5, 0 FROM memory_flags GROUP BY user_id "
            "UNION ALL SELECT user_id, 5, 0 FROM pii_originals GROUP BY user_id) u "
            "GROUP BY user_id ORDER BY min(t::numeric * 1e19 + o), user_id"
        )
        return [str(r[0]) for r in rows]

    def stored_entries(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, StoredEntry]:
        if not memory_ids:
            return {}
        ids = list(dict.fromkeys(memory_ids))
        with self._db.reading(user_id) as c:
            archived = run(
                c, "SELECT id, body, vec FROM archive WHERE user_id = %s AND id = ANY(%s)", (user_id, ids)
            ).fetchall()
            live = run(
                c, "SELECT id, body, vec FROM memories WHERE user_id = %s AND id = ANY(%s)", (user_id, ids)
            ).fetchall()
        return {str(mid): StoredEntry(str(body), as_array(vec).copy()) for mid, body, vec in (*archived, *live)}
