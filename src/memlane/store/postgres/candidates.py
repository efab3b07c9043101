"""What the read path's dimensions ask about a candidate pool: facts per memory (one query, entities included),
session neighbours, filters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from memlane.models import Filters
from memlane.store.postgres.db import Database
from memlane.store.postgres.hot_feed import HotScopes
from memlane.store.postgres.rows import FILTERS, filter_sql
from memlane.store.records import CandidateFacts, Position
from memlane.store.sql.rows import from_micros

_NONE: Mapping[str, bool] = MappingProxyType({})


class PostgresCandidateIndex:
    """Per-pool lookups: from the user's read model (``hot_feed``) outside a transaction, else one query each."""

    _db: Database
    _hot: HotScopes

    def candidate_facts(
        self, user_id: str, memory_ids: Sequence[str], entities: Sequence[str] = ()
    ) -> dict[str, CandidateFacts]:
        if not memory_ids:
            return {}
        ents = list(dict.fromkeys(entities))
        with self._hot.using(user_id) as model:
            if model is not None:
                return model.facts(memory_ids, ents)
        rows = self._db.read(
            "SELECT m.id, m.ts, m.importance, m.session_id, m.position, m.event_time, m.event_end, m.category, "
            "m.intent, (SELECT array_agg(e.entity || CASE WHEN e.said_by THEN '+' ELSE '-' END) FROM memory_entities e "
            "WHERE e.pk = m.pk AND e.entity = ANY(%s)) FROM memories m WHERE m.user_id = %s AND m.id = ANY(%s)",
            (ents, user_id, list(memory_ids)),
            scope=user_id,
        )
        out: dict[str, CandidateFacts] = {}
        for mid, ts, imp, session, position, ev_start, ev_end, category, intent, involved in rows:
            out[str(mid)] = CandidateFacts(
                from_micros(ts),
                imp,
                session,
                position,
                None if ev_start is None else from_micros(ev_start),
                None if ev_end is None else from_micros(ev_end),
                category,
                intent,
                {str(e)[:-1]: str(e).endswith("+") for e in involved} if involved else _NONE,
            )
        return out

    def neighbours(self, user_id: str, memory_ids: Sequence[str], width: int) -> dict[str, Position]:
        if not memory_ids:
            return {}
        with self._hot.using(user_id) as model:
            if model is not None:
                return {k: Position(s, p) for k, (s, p) in model.neighbours(memory_ids, width).items()}
        rows = self._db.read(
            "SELECT DISTINCT n.id, n.session_id, n.position FROM memories m JOIN memories n "
            "ON n.user_id = m.user_id AND n.session_id IS NOT DISTINCT FROM m.session_id "
            "AND n.position BETWEEN m.position - %s AND m.position + %s "
            "WHERE m.user_id = %s AND m.id = ANY(%s)",
            (width, width, user_id, list(memory_ids)),
            scope=user_id,
        )
        return {str(nid): Position(session, int(position)) for nid, session, position in rows}

    def matching(self, user_id: str, memory_ids: Sequence[str], filters: Filters) -> set[str]:
        if FILTERS.is_empty(filters) or not memory_ids:
            return set(memory_ids)
        if FILTERS.only_current(filters):
            with self._hot.using(user_id) as model:
                if model is not None:
                    return model.current(memory_ids)
        where, params = filter_sql(filters)
        if where == "true":
            return set(memory_ids)
        rows = self._db.read(
            f"SELECT m.id FROM memories m WHERE m.user_id = %s AND m.id = ANY(%s) AND {where}",
            (user_id, list(memory_ids), *params),
            scope=user_id,
        )
        return {str(r[0]) for r in rows}
