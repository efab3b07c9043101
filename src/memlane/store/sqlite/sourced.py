"""``SourcedIndex`` on SQLite: the sources (a JSON array) are matched by ``json_each`` inside the query."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from memlane.models import MemoryItem, MemoryKind
from memlane.store.sqlite.db import Database, marks
from memlane.store.sqlite.rows import SELECT_ITEM, row_to_item


class SQLiteSourced:
    """The memories read from given turns."""

    _db: Database

    def sourced_from(
        self, user_id: str, memory_ids: Sequence[str], kinds: Sequence[MemoryKind]
    ) -> builtins.list[MemoryItem]:
        if not memory_ids or not kinds:
            return []
        # the kind index, named: SQLite would walk the user's turns in time order instead, to spare the sort
        sql = (
            f"{SELECT_ITEM} INDEXED BY memories_user_kind_timeline "
            f"WHERE m.user_id = ? AND m.kind IN ({marks(len(kinds))}) AND m.sources != '[]' "
            "AND EXISTS (SELECT 1 FROM json_each(m.sources) s "
            f"WHERE json_extract(s.value, '$.memory_id') IN ({marks(len(memory_ids))})) ORDER BY m.ts, m.pk"
        )
        rows = self._db.read(sql, (user_id, *[k.value for k in kinds], *memory_ids))
        return [row_to_item(r) for r in rows]
