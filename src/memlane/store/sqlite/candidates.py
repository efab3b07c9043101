"""What the read path's dimensions ask about a candidate pool: facts per memory, session neighbours, filters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from memlane.models import Filters
from memlane.store.records import CandidateFacts, Position
from memlane.store.sqlite.db import Database, marks
from memlane.store.sqlite.hot_feed import HotScopes
from memlane.store.sqlite.reads import superseded
from memlane.store.sqlite.rows import filter_sql, from_micros, is_empty, only_current


class SQLiteCandidateIndex:
    """Per-pool lookups, each one or two queries whatever the dimensions engaged."""

    _db: Database
    _hot: HotScopes

    def candidate_facts(
        self, user_id: str, memory_ids: Sequence[str], entities: Sequence[str] = ()
    ) -> dict[str, CandidateFacts]:
        ents = list(dict.fromkeys(entities))
        none: Mapping[str, bool] = MappingProxyType({})
        with self._hot.using(user_id) as model:
            if model is not None:
                return model.facts(memory_ids, ents)
        involved: dict[str, dict[str, bool]] = {}
        if ents:
            for mid, ent, said_by in self._db.read_in(
                # Driven by the candidate ids (CROSS JOIN fixes the order): a speaker may have thousands of rows.
                "SELECT m.id, e.entity, e.said_by FROM memories m CROSS JOIN memory_entities e ON e.pk = m.pk "
                f"WHERE +m.user_id = ? AND m.id IN ({{marks}}) AND e.entity IN ({marks(len(ents))})",
                memory_ids,
                (user_id,),
                ents,
            ):
                involved.setdefault(str(mid), {})[str(ent)] = bool(said_by)
        return {
            str(mid): CandidateFacts(
                from_micros(ts),
                imp,
                session,
                position,
                None if ev_start is None else from_micros(ev_start),
                None if ev_end is None else from_micros(ev_end),
                category,
                intent,
                involved.get(mid, none),
            )
            for mid, ts, imp, session, position, ev_start, ev_end, category, intent in self._db.read_in(
                "SELECT id, ts, importance, session_id, position, event_time, event_end, category, intent "
                "FROM memories WHERE +user_id = ? AND id IN ({marks})",
                memory_ids,
                (user_id,),
            )
        }

    def neighbours(self, user_id: str, memory_ids: Sequence[str], width: int) -> dict[str, Position]:
        with self._hot.using(user_id) as model:
            if model is not None:
                return {k: Position(s, p) for k, (s, p) in model.neighbours(memory_ids, width).items()}
        out: dict[str, Position] = {}
        for nid, session, position in self._db.read_in(
            "SELECT DISTINCT n.id, n.session_id, n.position FROM memories m JOIN memories n "
            "ON n.user_id = m.user_id AND n.session_id IS m.session_id "
            "AND n.position BETWEEN m.position - ? AND m.position + ? "
            "WHERE +m.user_id = ? AND m.id IN ({marks})",
            memory_ids,
            (width, width, user_id),
        ):
            out[str(nid)] = Position(session, int(position))
        return out

    def matching(self, user_id: str, memory_ids: Sequence[str], filters: Filters) -> set[str]:
        if is_empty(filters):
            return set(memory_ids)
        if only_current(filters):
            with self._hot.using(user_id) as model:
                if model is not None:
                    return model.current(memory_ids)
            return set(memory_ids) - superseded(self._db, user_id)[1]
        where, params = filter_sql(filters)
        rows = self._db.read_in(
            f"SELECT m.id FROM memories m WHERE +m.user_id = ? AND m.id IN ({{marks}}) AND {where}",
            memory_ids,
            (user_id,),
            params,
        )
        return {str(r[0]) for r in rows}
