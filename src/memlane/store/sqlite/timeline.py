"""The timeline on SQLite (see ``memlane.store.timeline``): one indexed query per page.

SQLite's planner has no statistics to tell a rare entity (or the few flagged memories) from a common one, so this
counts the matches first (an index-only count) and picks the plan: few matches are read whole and sorted, many are
probed row by row along the time index, where a page fills after about ``limit * rows / matches`` rows.
"""

from __future__ import annotations

import builtins
from typing import Final

from memlane.models import MemoryItem
from memlane.records.timeline import TimelineCursor, TimelineFilter
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import SELECT_ITEM, row_to_item, to_micros
from memlane.store.timeline import Plan, timeline_sql

#: Up to this many matches of the entity or flag filter, they are read and sorted rather than probed for.
FEW: Final = 2000


class SQLiteTimeline:
    """A user's memories in timeline order (indexes of migration ``0019_timeline``)."""

    _db: Database

    def timeline(
        self, user_id: str, where: TimelineFilter, limit: int, after: TimelineCursor | None
    ) -> builtins.list[MemoryItem]:
        bound = None if after is None else (to_micros(after.at), after.memory_id)
        plan = self._timeline_plan(user_id, where)
        sql, params = timeline_sql(SELECT_ITEM, user_id, where, limit, bound, mark="?", id_expr="m.id", plan=plan)
        return [row_to_item(r) for r in self._db.read(sql, params)]

    def _timeline_plan(self, user_id: str, where: TimelineFilter) -> Plan:
        counts = []
        if where.entity is not None:
            sql = f"SELECT count(*) FROM (SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ? LIMIT {FEW})"
            counts.append(int(self._db.read(sql, (user_id, where.entity))[0][0]))
        if where.flagged_only:
            sql = f"SELECT count(*) FROM (SELECT 1 FROM memory_flags WHERE user_id = ? LIMIT {FEW})"
            counts.append(int(self._db.read(sql, (user_id,))[0][0]))
        return "drive" if counts and min(counts) < FEW else "probe"
