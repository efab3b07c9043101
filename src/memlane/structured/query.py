"""Typed structured queries: which memories (``Match``), what to do with them (``StructuredQuery``), and results.

A query is data, never text: every value in it is bound as a parameter when a store compiles it. The two store
primitives (``MemorySelect``: matching memories in time order; ``EntitySelect``: the entities those memories involve)
are what a backend implements; counting, existence, first/last, ordering and time ranges are built from them
(``structured/run.py``). A relation source (typed edges between entities) can be added as a third primitive.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from memlane.errors import ValidationError

#: Most rows one primitive returns (a count over more says "at least").
MAX_ROWS: Final = 10_000
_WORD: Final = re.compile(r"^[^\W_][\w'’-]{0,63}$", re.UNICODE)


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
class Match:
    """Which memories: every condition given must hold.

    ``subject``: the canonical entity who said it, or who is tagged in an observation (a memory without a speaker
    that involves it). ``entities``: canonical names the memory must involve. ``terms``: groups of words; the memory's
    text must hold one word of every group (matched by the text index, stemmed). ``roles``: message roles
    (``"observation"`` for grounded observations). ``since``/``until``: the time the memory happened (its event time,
    else its timestamp) lies in ``[since, until)``.
    """

    subject: str | None = None
    entities: tuple[str, ...] = ()
    terms: tuple[tuple[str, ...], ...] = ()
    roles: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        for group in self.terms:
            if not group:
                raise ValidationError("a term group needs at least one word")
            for word in group:
                if not isinstance(word, str) or not _WORD.match(word):
                    raise ValidationError(f"term {str(word)[:40]!r} is not one word")
        for name in (*self.entities, *([self.subject] if self.subject else [])):
            if not isinstance(name, str) or not name.strip() or len(name) > 256:
                raise ValidationError(f"entity name {str(name)[:40]!r} must be 1 to 256 characters")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValidationError("since must be before until")

    @property
    def is_empty(self) -> bool:
        return not (self.subject or self.entities or self.terms or self.roles or self.since or self.until)

    def describe(self) -> str:
        """The conditions in words, for explain output."""
        parts: list[str] = []
        if self.subject:
            parts.append(f"by {self.subject!r}")
        if self.entities:
            parts.append("involving " + " and ".join(repr(e) for e in self.entities))
        for group in self.terms:
            parts.append("saying " + " or ".join(repr(w) for w in group))
        if self.roles:
            parts.append("role " + " or ".join(self.roles))
        if self.since or self.until:
            start = self.since.isoformat() if self.since else "..."
            end = self.until.isoformat() if self.until else "..."
            parts.append(f"in [{start}, {end})")
        return ", ".join(parts) or "every memory"


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


# -- the store primitives and their rows ------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemorySelect:
    """Memories of one user that ``match``, in time order (``newest_first`` reverses it), at most ``limit``."""

    match: Match
    newest_first: bool = False
    limit: int = MAX_ROWS


@dataclass(frozen=True)
class EntitySelect:
    """The entities (of ``kind``, when given) that the memories ``match`` selects involve, most involved first."""

    match: Match
    kind: str | None = None
    limit: int = 100


@dataclass(frozen=True)
class SelectedMemory:
    """One row of a ``MemorySelect``: the memory's id, session, role, when it happened (start, end), and whether it
    is attached to another memory (a photo shared in a turn).
    """

    memory_id: str
    session_id: str | None
    role: str | None
    start: datetime
    end: datetime | None
    attached: bool = False


@dataclass(frozen=True)
class SelectedEntity:
    """One row of an ``EntitySelect``: an entity, its kind and display form, and how many matching memories."""

    name: str
    kind: str
    display: str
    memories: int


@dataclass(frozen=True)
class CompiledSQL:
    """A statement a store ran for a primitive, with its bound parameters (shown by explain, never user-built)."""

    sql: str
    params: tuple[object, ...]


@dataclass(frozen=True)
class MemoryRows:
    """The rows of a ``MemorySelect`` and the statement that produced them."""

    rows: tuple[SelectedMemory, ...]
    statement: CompiledSQL


@dataclass(frozen=True)
class EntityRows:
    """The rows of an ``EntitySelect`` and the statement that produced them."""

    rows: tuple[SelectedEntity, ...]
    statement: CompiledSQL
