"""The timeline on PostgreSQL (see ``memlane.store.timeline``): one indexed query per page, confined to the user."""

from __future__ import annotations

import builtins

from memlane.models import MemoryItem
from memlane.records.timeline import TimelineCursor, TimelineFilter
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import SELECT_ITEM
from memlane.store.sql.rows import row_to_item, to_micros
from memlane.store.timeline import timeline_sql


class PostgresTimeline:
    """A user's memories in timeline order (indexes of migration ``0012_timeline``)."""

    _db: Database

    def timeline(
        self, user_id: str, where: TimelineFilter, limit: int, after: TimelineCursor | None
    ) -> builtins.list[MemoryItem]:
        bound = None if after is None else (to_micros(after.at), after.memory_id)
        sql, params = timeline_sql(SELECT_ITEM, user_id, where, limit, bound, mark="%s", id_expr='m.id COLLATE "C"')
        return [row_to_item(r) for r in self._db.read(sql, params, scope=user_id)]
