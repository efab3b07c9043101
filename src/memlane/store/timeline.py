"""The timeline capability: a user's memories newest first by when they happened, filtered exactly in the store and
paged by a keyset cursor, so any page of any filter costs about the same at any scope size.

``timeline_sql`` renders the query for the SQL backends (only the placeholder and the id's collation differ); the
migrations ``0019_timeline`` (SQLite) and ``0012_timeline`` (PostgreSQL) add the indexes it walks.
"""

from __future__ import annotations

import builtins
from typing import Any, Literal, Protocol, runtime_checkable

from memlane.models import MemoryItem
from memlane.records.timeline import TimelineCursor, TimelineFilter

#: When a memory happened, else when it was stored: the timeline's order (indexed as this very expression).
TIME_KEY = "coalesce(m.event_time, m.created_at)"


@runtime_checkable
class TimelineIndex(Protocol):
    """A user's memories in timeline order."""

    def timeline(
        self, user_id: str, where: TimelineFilter, limit: int, after: TimelineCursor | None
    ) -> builtins.list[MemoryItem]:
        """Up to ``limit`` memories of this user matching ``where``, newest first by event time (creation time when
        unknown), ties by id descending; those after ``after`` (a cursor of the previous page's last one).
        """
        ...


#: How the entity and flag filters are applied: as a set the planner may drive from or probe (``"in"``), by a probe
#: per row of the time index (``"probe"``: matches are dense, a page is found after a few rows), or from the set
#: with the time index kept out (``"drive"``: matches are few, reading them all and sorting them is cheaper).
Plan = Literal["in", "probe", "drive"]


def timeline_sql(
    select: str,
    user_id: str,
    where: TimelineFilter,
    limit: int,
    after: tuple[int, str] | None,
    *,
    mark: str,
    id_expr: str,
    plan: Plan = "in",
) -> tuple[str, list[Any]]:
    """The timeline query: ``select`` (``SELECT ... FROM memories m``) with the filter's conditions, the keyset bound
    ``after`` (a time in microseconds and an id), order and limit; ``mark`` is the placeholder, ``id_expr`` the id
    as ordered (bytewise on every backend, so a cursor means the same everywhere). ``"drive"`` is SQLite's only
    (its unary ``+`` keeps an index from serving a column).
    """
    conds = [f"{'+' if plan == 'drive' else ''}m.user_id = {mark}"]
    params: list[Any] = [user_id]
    if where.kind is not None:
        conds.append(f"m.kind = {mark}")
        params.append(where.kind.value)
    if where.category is not None:
        conds.append(f"m.category = {mark}")
        params.append(where.category)
    if not where.include_superseded:
        conds.append("m.valid_until IS NULL")
    if where.entity is not None:
        if plan == "probe":
            conds.append(f"EXISTS (SELECT 1 FROM memory_entities e WHERE e.pk = m.pk AND e.entity = {mark})")
            params.append(where.entity)
        else:
            conds.append(f"m.pk IN (SELECT e.pk FROM memory_entities e WHERE e.user_id = {mark} AND e.entity = {mark})")
            params += [user_id, where.entity]
    if where.flagged_only:
        if plan == "probe":
            conds.append("EXISTS (SELECT 1 FROM memory_flags f WHERE f.user_id = m.user_id AND f.memory_id = m.id)")
        else:
            conds.append(f"m.id IN (SELECT f.memory_id FROM memory_flags f WHERE f.user_id = {mark})")
            params.append(user_id)
    if after is not None:
        # the bare bound on the time lets the index seek (SQLite does not seek on a row value of an expression)
        conds.append(f"{TIME_KEY} <= {mark} AND ({TIME_KEY} < {mark} OR {id_expr} < {mark})")
        params += [after[0], after[0], after[1]]
    order = f"ORDER BY {TIME_KEY} DESC, {id_expr} DESC LIMIT {mark}"
    return f"{select} WHERE {' AND '.join(conds)} {order}", [*params, limit]
