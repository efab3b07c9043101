"""Structured-query records that cross the store seam: which memories (``Match``), the two store primitives
(``MemorySelect``, ``EntitySelect``) and the rows they return.

A query is data, never text: every value in it is bound as a parameter when a store compiles it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memlane.errors import ValidationError

#: Most rows one primitive returns (a count over more says "at least").
MAX_ROWS: Final = 10_000
WORD: Final = re.compile(r"^[^\W_][\w'’-]{0,63}$", re.UNICODE)


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
                if not isinstance(word, str) or not WORD.match(word):
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
