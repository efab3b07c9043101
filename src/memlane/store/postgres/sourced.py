"""``SourcedIndex`` on PostgreSQL: the sources (JSON text) are matched inside the query, confined to the user."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from memlane.models import MemoryItem, MemoryKind
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import SELECT_ITEM
from memlane.store.sql.rows import row_to_item


class PostgresSourced:
    """The memories read from given turns."""

    _db: Database

    def sourced_from(
        self, user_id: str, memory_ids: Sequence[str], kinds: Sequence[MemoryKind]
    ) -> builtins.list[MemoryItem]:
        if not memory_ids or not kinds:
            return []
        sql = (
            f"{SELECT_ITEM} WHERE m.user_id = %s AND m.kind = ANY(%s) AND m.sources <> '[]' "
            "AND EXISTS (SELECT 1 FROM jsonb_array_elements(m.sources::jsonb) s WHERE s->>'memory_id' = ANY(%s)) "
            "ORDER BY m.ts, m.pk"
        )
        rows = self._db.read(sql, (user_id, [k.value for k in kinds], list(memory_ids)), scope=user_id)
        return [row_to_item(r) for r in rows]
