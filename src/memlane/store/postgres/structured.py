"""Structured questions in PostgreSQL: ``MemorySelect``/``EntitySelect`` compiled to one bound SQL statement each.

The statement's shape comes from constants (how many conditions and words); every value, entity name and word is a
bound parameter. Word groups are matched by the text index: each word is analysed as the memories were
(``phraseto_tsquery`` over the ``memlane`` configuration, from a bound value, so never parsed as query syntax), a
group is the OR of its words' queries, and the memory's own words (not the previous turn's) must match every group.
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
from memlane.store.postgres.db import Database
from memlane.store.sqlite.rows import from_micros, to_micros

# When a memory happened: its event time, unless its event span holds the moment it was said or seen ("today"
# said at 21:40 happened at 21:40 for ordering, not at midnight).
_WHEN = (
    "(CASE WHEN m.event_time IS NULL OR (m.event_time <= m.ts AND m.ts < coalesce(m.event_end, m.event_time)) "
    "THEN m.ts ELSE m.event_time END)"
)


def _group_query(size: int) -> str:
    """The tsquery of one word group of ``size`` bound words: any of them."""
    return "(" + " || ".join(["phraseto_tsquery('memlane', %s)"] * size) + ")"


def match_sql(user_id: str, match: Match) -> tuple[str, list[Any]]:
    """The WHERE condition (over ``memories m``) of a match, and its parameters.

    Structured questions read the lossless record (turns and observations, ``kind = 'message'``), current ones only.
    """
    parts = ["m.user_id = %s", "m.kind = 'message'", "m.valid_until IS NULL"]
    params: list[Any] = [user_id]
    if match.subject:
        parts.append(
            "EXISTS (SELECT 1 FROM memory_entities s WHERE s.pk = m.pk AND s.entity = %s "
            "AND (s.said_by OR m.speaker IS NULL))"
        )
        params.append(match.subject)
    for name in match.entities:
        parts.append("EXISTS (SELECT 1 FROM memory_entities x WHERE x.pk = m.pk AND x.entity = %s)")
        params.append(name)
    for group in match.terms:
        query = _group_query(len(group))
        # the indexed column (the memory's and the previous turn's words) narrows; its own words decide
        parts.append(f"m.tsv @@ {query} AND to_tsvector('memlane', m.body) @@ {query}")
        params.extend([*group, *group])
    if match.roles:
        parts.append("m.role = ANY(%s)")
        params.append(list(match.roles))
    if match.since is not None:
        parts.append(f"{_WHEN} >= %s")
        params.append(to_micros(match.since))
    if match.until is not None:
        parts.append(f"{_WHEN} < %s")
        params.append(to_micros(match.until))
    return " AND ".join(parts), params


class PostgresStructuredIndex:
    """``StructuredIndex`` over the memory, entity and text columns."""

    _db: Database

    def select_memories(self, user_id: str, select: MemorySelect) -> MemoryRows:
        where, params = match_sql(user_id, select.match)
        direction = "DESC" if select.newest_first else "ASC"
        sql = (
            f"SELECT m.id, m.session_id, m.role, {_WHEN}, m.event_end, "
            "coalesce(m.metadata -> 'attached_to', 'null'::jsonb) <> 'null'::jsonb FROM memories m "
            f"WHERE {where} ORDER BY {_WHEN} {direction}, m.pk {direction} LIMIT %s"
        )
        params.append(select.limit)
        rows = self._db.read(sql, params, scope=user_id)
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
            kind = "AND a.kind = %s "
            params.append(select.kind)
        sql = (
            "SELECT e.entity, coalesce(a.kind, 'other'), coalesce(a.display, e.entity), count(DISTINCT e.pk) AS n "
            "FROM memories m JOIN memory_entities e ON e.pk = m.pk "
            "LEFT JOIN entities a ON a.user_id = m.user_id AND a.alias = e.entity "
            f"WHERE {where} {kind}GROUP BY e.entity, a.kind, a.display "
            f'ORDER BY n DESC, min({_WHEN}), e.entity COLLATE "C" LIMIT %s'
        )
        params.append(select.limit)
        rows = self._db.read(sql, params, scope=user_id)
        return EntityRows(
            rows=tuple(SelectedEntity(str(n), str(k), str(d), int(c)) for n, k, d, c in rows),
            statement=CompiledSQL(sql, tuple(params)),
        )
