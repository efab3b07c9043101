"""Typed structured queries: which memories (``Match``), what to do with them (``StructuredQuery``), and results.

A query is data, never text: every value in it is bound as a parameter when a store compiles it. The two store
primitives (``MemorySelect``: matching memories in time order; ``EntitySelect``: the entities those memories involve)
are what a backend implements; counting, existence, first/last, ordering and time ranges are built from them
(``structured/run.py``). A relation source (typed edges between entities) can be added as a third primitive.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from memlane.errors import ValidationError
from memlane.records.structured import MAX_ROWS as MAX_ROWS  # re-exported: the records live at the bottom
from memlane.records.structured import WORD as _WORD
from memlane.records.structured import CompiledSQL as CompiledSQL
from memlane.records.structured import EntityRows as EntityRows
from memlane.records.structured import EntitySelect as EntitySelect
from memlane.records.structured import Match as Match
from memlane.records.structured import MemoryRows as MemoryRows
from memlane.records.structured import MemorySelect as MemorySelect
from memlane.records.structured import SelectedEntity as SelectedEntity
from memlane.records.structured import SelectedMemory as SelectedMemory


class Op(enum.StrEnum):
    """What a structured question asks of the matching memories."""

    COUNT = "count"  # how many times
    EXISTS = "exists"  # has it ever happened
    LIST = "list"  # which things (entities of a kind) or which memories
    FIRST = "first"  # the earliest
    LAST = "last"  # the latest
    ORDER = "order"  # which of two happened first
    RANGE = "range"  # what happened in a time range


class Unit(enum.StrEnum):
    """What ``COUNT`` counts: matching memories, or occurrences (a session's turns, or observations whose windows
    overlap, count once).
    """

    MEMORIES = "memories"
    OCCURRENCES = "occurrences"


@dataclass(frozen=True)
class StructuredQuery:
    """One structured question: an operation over the memories ``match`` selects.

    ``versus`` is the second side of ``ORDER`` (with ``labels``, the answer names the earlier side instead of
    saying whether ``match`` came first); ``entity_kind`` makes ``LIST`` list entities of that kind (``None``:
    list the memories); ``unit`` is what ``COUNT`` counts; ``limit`` caps listed rows.
    """

    op: Op
    match: Match = field(default_factory=Match)
    versus: Match | None = None
    entity_kind: str | None = None
    unit: Unit = Unit.OCCURRENCES
    limit: int = 20
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.labels and (self.op is not Op.ORDER or len(self.labels) != 2):
            raise ValidationError("labels name the two sides of an order query")
        if not 1 <= self.limit <= 1000:
            raise ValidationError("limit must be 1 to 1000")
        if (self.op is Op.ORDER) != (self.versus is not None):
            raise ValidationError("versus is needed by order and only by order")
        if self.op is Op.RANGE and self.match.since is None and self.match.until is None:
            raise ValidationError("a range query needs since or until")
        if self.entity_kind is not None and (self.op is not Op.LIST or not _WORD.match(self.entity_kind)):
            raise ValidationError("entity_kind is one word, and only for list")
        if self.match.is_empty and self.op is not Op.RANGE:
            raise ValidationError(f"a {self.op.value} query needs at least one condition")

    def describe(self) -> str:
        """The query in words, for explain output."""
        text = f"{self.op.value} ({self.unit.value})" if self.op is Op.COUNT else self.op.value
        if self.entity_kind:
            text += f" entities of kind {self.entity_kind!r}"
        text += f": {self.match.describe()}"
        if self.versus is not None:
            text += f" | versus: {self.versus.describe()}"
        return text
