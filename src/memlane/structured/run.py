"""Running a ``StructuredQuery``: the store's two primitives composed into a typed, explained result."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from memlane.models import MemoryItem
from memlane.observe import OBSERVATION_ROLE
from memlane.structured.query import (
    MAX_ROWS,
    CompiledSQL,
    EntityRows,
    EntitySelect,
    Match,
    MemoryRows,
    MemorySelect,
    Op,
    SelectedMemory,
    StructuredQuery,
    Unit,
)


class StructuredSource(Protocol):
    """What running a structured query needs of a store: its two primitives and reading memories by id."""

    def select_memories(self, user_id: str, select: MemorySelect) -> MemoryRows: ...

    def select_entities(self, user_id: str, select: EntitySelect) -> EntityRows: ...

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]: ...


class Statement(BaseModel):
    """One statement run for the query, with its bound parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sql: str
    params: list[Any]

    @classmethod
    def of(cls, compiled: CompiledSQL) -> Statement:
        return cls(sql=compiled.sql, params=list(compiled.params))


class StructuredResult(BaseModel):
    """A structured query's answer: a short text, its typed value, the evidence and the statements run."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="the query in words")
    op: Op
    answer: str
    value: int | bool | str | list[str] | None = None
    memories: list[MemoryItem] = Field(default_factory=list, description="the evidence, in time order")
    statements: list[Statement] = Field(default_factory=list)
    truncated: bool = Field(default=False, description="a primitive hit its row limit: a count is a lower bound")

    @property
    def found_nothing(self) -> bool:
        """Whether a question that presumes something happened (list, first, last, order, range) found none of it.

        A count of 0 or an existence "no" is an answer; an empty list or an unknown order is not.
        """
        if self.op in (Op.COUNT, Op.EXISTS):
            return False
        return not self.memories or self.value in (None, [])


def occurrences(rows: Sequence[SelectedMemory]) -> list[list[SelectedMemory]]:
    """Group matching rows into occurrences: the turns of one session are one (with the photos attached to them);
    observations whose time windows overlap (or touch) are one; anything else is its own.
    """
    groups: list[list[SelectedMemory]] = []
    by_session: dict[str, list[SelectedMemory]] = {}
    chains: list[tuple[datetime, list[SelectedMemory]]] = []  # (end, group) of the open observation chains
    for row in sorted(rows, key=lambda r: r.start):
        if row.role == OBSERVATION_ROLE and not row.attached:
            end = row.end or row.start
            chain = next((g for e, g in chains if row.start <= e and g[0].session_id == row.session_id), None)
            if chain is None:
                chain = []
                groups.append(chain)
            chain.append(row)
            chains = [(e, g) for e, g in chains if g is not chain]
            chains.append((max([end, *(r.end or r.start for r in chain)]), chain))
        elif row.session_id is not None:
            group = by_session.get(row.session_id)
            if group is None:
                group = by_session[row.session_id] = []
                groups.append(group)
            group.append(row)
        else:
            groups.append([row])
    return groups


def _named_by(display: str, words: set[str]) -> bool:
    """Whether the query's words name this entity ("sink" names ``sink_1``): it is a condition, not an answer."""
    base = re.sub(r"[_\s-]*\d+$", "", display.casefold())
    return display.casefold() in words or base in words or bool(set(re.split(r"[_\s-]+", base)) & words)


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def _label(match: Match) -> str:
    return " ".join(group[0] for group in match.terms) or match.describe()


def run_query(source: StructuredSource, user_id: str, query: StructuredQuery) -> StructuredResult:
    """Run ``query`` over ``user_id``'s memories and say what it found."""
    statements: list[CompiledSQL] = []
    truncated = False

    def select(match: Match, *, newest_first: bool = False, limit: int = MAX_ROWS) -> tuple[SelectedMemory, ...]:
        nonlocal truncated
        found = source.select_memories(user_id, MemorySelect(match, newest_first, limit))
        statements.append(found.statement)
        truncated = truncated or (limit == MAX_ROWS and len(found.rows) == MAX_ROWS)
        return found.rows

    value: int | bool | str | list[str] | None
    evidence: list[str]
    op = query.op
    if op is Op.COUNT:
        rows = select(query.match)
        if query.unit is Unit.MEMORIES:
            value, evidence = len(rows), [r.memory_id for r in rows]
        else:
            groups = occurrences(rows)
            value, evidence = len(groups), [g[0].memory_id for g in groups]
        answer = f"{value}{'+' if truncated else ''}"
    elif op is Op.EXISTS:
        rows = select(query.match, limit=1)
        value, evidence = bool(rows), [r.memory_id for r in rows]
        answer = "yes" if rows else "no"
    elif op in (Op.FIRST, Op.LAST):
        rows = select(query.match, newest_first=op is Op.LAST, limit=1)
        evidence = [r.memory_id for r in rows]
        value = _day(rows[0].start) if rows else None
        answer = rows[0].start.strftime("%-d %B %Y, %H:%M") if rows else "no matching memory"
        if rows:
            first_item = source.get_many(user_id, evidence).get(evidence[0])
            answer += f": {first_item.text}" if first_item is not None else ""
    elif op is Op.ORDER:
        assert query.versus is not None
        first = select(query.match, limit=1)
        second = select(query.versus, limit=1)
        evidence = [r.memory_id for r in (*first, *second)]
        if not first or not second:
            missing = query.match if not first else query.versus
            value, answer = None, f"unknown: no memory {missing.describe()}"
        else:
            value = first[0].start <= second[0].start
            earlier, later = (query.match, query.versus) if value else (query.versus, query.match)
            if query.labels:
                answer = query.labels[0] if value else query.labels[1]
            else:
                answer = f"{'yes' if value else 'no'}: {_label(earlier)!r} came before {_label(later)!r}"
    elif op is Op.LIST and query.entity_kind is not None:
        found = source.select_entities(user_id, EntitySelect(query.match, query.entity_kind, query.limit + 10))
        statements.append(found.statement)
        named = {query.match.subject, *query.match.entities}
        words = {w.casefold() for group in query.match.terms for w in group}
        kept = [e for e in found.rows if e.name not in named and not _named_by(e.display, words)][: query.limit]
        value = [e.display for e in kept]
        answer = ", ".join(value) if value else "none"
        evidence = [r.memory_id for r in select(query.match, limit=query.limit)]
    else:  # RANGE, or LIST of memories
        rows = select(query.match, limit=query.limit)
        evidence = [r.memory_id for r in rows]
        value = f"{len(rows)} memor{'y' if len(rows) == 1 else 'ies'}"
        answer = value
    items = source.get_many(user_id, evidence)
    memories = [items[i] for i in evidence if i in items]
    if op in (Op.RANGE, Op.LIST) and not isinstance(value, list):
        answer = "; ".join(m.text for m in memories[:5]) or "no matching memory"
    return StructuredResult(
        query=query.describe(),
        op=op,
        answer=answer,
        value=value,
        memories=memories,
        statements=[Statement.of(s) for s in statements],
        truncated=truncated,
    )
