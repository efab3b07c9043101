"""What a whole-store copy reads and writes in PostgreSQL (``StoreTransfer``): users, index entries, history."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence

from memlane.models import HistoryEntry
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import as_array, run
from memlane.store.records import StoredEntry
from memlane.store.sqlite.rows import to_micros


class PostgresTransfer:
    """The ``StoreTransfer`` capability over the shared ``Database``."""

    _db: Database

    def user_ids(self) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT user_id FROM (SELECT user_id, 0 AS t, min(pk) AS o FROM memories GROUP BY user_id "
            "UNION ALL SELECT user_id, 1, min(pk) FROM archive GROUP BY user_id "
            "UNION ALL SELECT user_id, 2, min(seq) FROM history GROUP BY user_id "
            "UNION ALL SELECT user_id, 3, min(seq) FROM feedback GROUP BY user_id "
            "UNION ALL SELECT user_id, 4, min(seq) FROM jobs GROUP BY user_id) u "
            "GROUP BY user_id ORDER BY min(t::numeric * 1e19 + o)"
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

    def history_ids(self, user_id: str) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT memory_id FROM history WHERE user_id = %s GROUP BY memory_id ORDER BY min(seq)",
            (user_id,),
            scope=user_id,
        )
        return [str(r[0]) for r in rows]

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        with self._db.atomic(user_id) as c:
            run(c, "DELETE FROM history WHERE user_id = %s AND memory_id = %s", (user_id, memory_id))
            if not entries:
                return
            with c.cursor() as cur:
                cur.executemany(
                    b"INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) "
                    b"VALUES (%s, %s, %s, %s, %s, %s, %s)",
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
