"""Structured-question primitives, once for both SQL stores: a typed ``Match`` compiled to one statement with bound
parameters, in the store's dialect.

Only fixed SQL text is written here; every value of the query (names, words, times, kinds, limits) is a bound
parameter. How a group of words is matched is the backend's (``_word_groups``: an FTS5 MATCH expression of quoted
words in SQLite, ``phraseto_tsquery`` in PostgreSQL), so words are matched, never parsed as query syntax.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Generic, TypeVar

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
from memlane.store.sql.dialect import Dialect, Reader
from memlane.store.sql.rows import from_micros, to_micros

# When a memory happened: its event time, unless its event span holds the moment it was said or seen ("today"
# said at 21:40 happened at 21:40 for ordering, not at midnight).
WHEN: Final = (
    "(CASE WHEN m.event_time IS NULL OR (m.event_time <= m.ts AND m.ts < coalesce(m.event_end, m.event_time)) "
    "THEN m.ts ELSE m.event_time END)"
)

R = TypeVar("R", bound=Reader)


class SQLStructuredIndex(Generic[R]):
    """``StructuredIndex`` over the memory, entity and text tables (mixed into a backend's store)."""

    _db: R
    _dialect: ClassVar[Dialect]

    def _word_groups(self, user_id: str, groups: tuple[tuple[str, ...], ...]) -> tuple[list[str], list[Any]]:
        """Conditions (over ``memories m``, ``?`` parameters) that the memory's own words hold one word of every
        group, and their parameters.
        """
        raise NotImplementedError

    def match_sql(self, user_id: str, match: Match) -> tuple[str, list[Any]]:
        """The WHERE condition (over ``memories m``) of a match, and its parameters, with ``?`` placeholders.

        Structured questions read the lossless record (turns and observations, ``kind = 'message'``), current ones
        only.
        """
        d = self._dialect
        parts = ["m.user_id = ?", "m.kind = 'message'", "m.valid_until IS NULL"]
        params: list[Any] = [user_id]
        if match.subject:
            parts.append(
                "EXISTS (SELECT 1 FROM memory_entities s WHERE s.pk = m.pk AND s.entity = ? "
                f"AND ({d.flag('s.said_by')} OR m.speaker IS NULL))"
            )
            params.append(match.subject)
        for name in match.entities:
            parts.append("EXISTS (SELECT 1 FROM memory_entities x WHERE x.pk = m.pk AND x.entity = ?)")
            params.append(name)
        if match.terms:
            words, values = self._word_groups(user_id, match.terms)
            parts.extend(words)
            params.extend(values)
        if match.roles:
            among, roles = d.in_list("m.role", list(match.roles))
            parts.append(among)
            params.extend(roles)
        if match.since is not None:
            parts.append(f"{WHEN} >= ?")
            params.append(to_micros(match.since))
        if match.until is not None:
            parts.append(f"{WHEN} < ?")
            params.append(to_micros(match.until))
        return " AND ".join(parts), params

    def select_memories(self, user_id: str, select: MemorySelect) -> MemoryRows:
        d = self._dialect
        where, params = self.match_sql(user_id, select.match)
        direction = "DESC" if select.newest_first else "ASC"
        sql = d.sql(
            f"SELECT m.id, m.session_id, m.role, {WHEN}, m.event_end, {d.has_key('m.metadata', 'attached_to')} "
            f"FROM memories m WHERE {where} ORDER BY {WHEN} {direction}, m.pk {direction} LIMIT ?"
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
        d = self._dialect
        where, params = self.match_sql(user_id, select.match)
        kind = ""
        if select.kind is not None:
            kind = "AND a.kind = ? "
            params.append(select.kind)
        # (user_id, alias) is the entity table's key: grouping by its columns as well groups by e.entity alone
        sql = d.sql(
            "SELECT e.entity, coalesce(a.kind, 'other'), coalesce(a.display, e.entity), count(DISTINCT e.pk) AS n "
            "FROM memories m JOIN memory_entities e ON e.pk = m.pk "
            "LEFT JOIN entities a ON a.user_id = m.user_id AND a.alias = e.entity "
            f"WHERE {where} {kind}GROUP BY e.entity, a.kind, a.display "
            f"ORDER BY n DESC, min({WHEN}), {d.binary('e.entity')} LIMIT ?"
        )
        params.append(select.limit)
        rows = self._db.read(sql, params, scope=user_id)
        return EntityRows(
            rows=tuple(SelectedEntity(str(n), str(k), str(shown), int(c)) for n, k, shown, c in rows),
            statement=CompiledSQL(sql, tuple(params)),
        )
