"""Structured-question primitives on SQLite: a typed ``Match`` compiled to one statement with bound parameters.

Only fixed SQL text is written here; every value of the query (names, words, times, kinds, limits) is a bound
parameter. Words reach FTS5 as one bound MATCH expression of double-quoted single words (``Match`` admits nothing
else), so they are matched, never parsed as FTS syntax.
"""

from __future__ import annotations

from typing import Any

from memlane.records.structured import (
    CompiledSQL,
    EntityRows,
    EntitySelect,
    Match,
    MemoryRows,
    MemorySelect,
    SelectedEntity,
    SelectedMemory,
)
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import from_micros, to_micros
from memlane.store.sqlite.text import scope_token

# When a memory happened: its event time, unless its event span holds the moment it was said or seen ("today"
# said at 21:40 happened at 21:40 for ordering, not at midnight).
_WHEN = (
    "(CASE WHEN m.event_time IS NULL OR (m.event_time <= m.ts AND m.ts < coalesce(m.event_end, m.event_time)) "
    "THEN m.ts ELSE m.event_time END)"
)


def fts_expression(user_id: str, groups: tuple[tuple[str, ...], ...]) -> str:
    """The FTS5 MATCH value: the user's scope token and, for every group, one of its (quoted) words in the body."""
    parts = [f"scope : {scope_token(user_id)}"]
    for group in groups:
        quoted = " OR ".join('"' + word.replace('"', '""') + '"' for word in group)
        parts.append(f"body : ({quoted})")
    return " AND ".join(parts)


def match_sql(user_id: str, match: Match) -> tuple[str, list[Any]]:
    """The WHERE condition (over ``memories m``) of a match, and its parameters.

    Structured questions read the lossless record (turns and observations, ``kind = 'message'``), current ones only.
    """
    parts = ["m.user_id = ?", "m.kind = 'message'", "m.valid_until IS NULL"]
    params: list[Any] = [user_id]
    if match.subject:
        parts.append(
            "EXISTS (SELECT 1 FROM memory_entities s WHERE s.pk = m.pk AND s.entity = ? "
            "AND (s.said_by = 1 OR m.speaker IS NULL))"
        )
        params.append(match.subject)
    for name in match.entities:
        parts.append("EXISTS (SELECT 1 FROM memory_entities x WHERE x.pk = m.pk AND x.entity = ?)")
        params.append(name)
    if match.terms:
        parts.append("m.pk IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)")
        params.append(fts_expression(user_id, match.terms))
    if match.roles:
        parts.append(f"m.role IN ({', '.join('?' * len(match.roles))})")
        params.extend(match.roles)
    if match.since is not None:
        parts.append(f"{_WHEN} >= ?")
        params.append(to_micros(match.since))
    if match.until is not None:
        parts.append(f"{_WHEN} < ?")
        params.append(to_micros(match.until))
    return " AND ".join(parts), params


class SQLiteStructuredIndex:
    """``StructuredIndex`` over the memory, entity and text tables."""

    _db: Database

    def select_memories(self, user_id: str, select: MemorySelect) -> MemoryRows:
        where, params = match_sql(user_id, select.match)
        direction = "DESC" if select.newest_first else "ASC"
        sql = (
            f"SELECT m.id, m.session_id, m.role, {_WHEN}, m.event_end, "
            f"json_extract(m.metadata, '$.attached_to') IS NOT NULL FROM memories m WHERE {where} "
            f"ORDER BY {_WHEN} {direction}, m.pk {direction} LIMIT ?"
        )
        params.append(select.limit)
        rows = self._db.read(sql, params)
        return MemoryRows(
            rows=tuple(
                SelectedMemory(
                    memory_id=str(mid),
                    session_id=session,
                    role=role,
                    start=from_micros(int(start)),
                    end=None if end is None else from_micros(int(end)),
                    attached=bool(attached),
                )
                for mid, session, role, start, end, attached in rows
            ),
            statement=CompiledSQL(sql, tuple(params)),
        )

    def select_entities(self, user_id: str, select: EntitySelect) -> EntityRows:
        where, params = match_sql(user_id, select.match)
        kind = ""
        if select.kind is not None:
            kind = "AND a.kind = ? "
            params.append(select.kind)
        sql = (
            "SELECT e.entity, coalesce(a.kind, 'other'), coalesce(a.display, e.entity), count(DISTINCT e.pk) AS n "
            "FROM memories m JOIN memory_entities e ON e.pk = m.pk "
            "LEFT JOIN entities a ON a.user_id = m.user_id AND a.alias = e.entity "
            f"WHERE {where} {kind}GROUP BY e.entity ORDER BY n DESC, min({_WHEN}), e.entity LIMIT ?"
        )
        params.append(select.limit)
        rows = self._db.read(sql, params)
        return EntityRows(
            rows=tuple(SelectedEntity(str(n), str(k), str(d), int(c)) for n, k, d, c in rows),
            statement=CompiledSQL(sql, tuple(params)),
        )
