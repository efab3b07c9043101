"""Typed records of the knowledge graph that cross the store seam: node types, relation claims and edges, slices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

#: The types an entity node can have. ``object`` covers products and things; ``other`` what the rules cannot tell.
NODE_TYPES: Final = ("person", "place", "organisation", "object", "activity", "event", "other")

# The entity table's kinds (``memlane.enrich.entities.KINDS``) as node types.
_FROM_KIND: Final[Mapping[str, str]] = {"product": "object", "date": "event", "quantity": "other"}

#: Relations of which a subject has one current object at a time: a later one closes the earlier.
FUNCTIONAL: Final = frozenset({"lives_in", "works_at", "spouse_of", "partner_of"})


def node_type(kind: str) -> str:
    """The node type of an entity-table kind ("product" -> "object"); unknown kinds are "other"."""
    kind = _FROM_KIND.get(kind, kind)
    return kind if kind in NODE_TYPES else "other"


@dataclass(frozen=True)
class RelationClaim:
    """A typed relation between two entities (canonical names) read from one memory, not yet stored.

    ``subject_type``/``object_type`` are node types for entities the graph does not know yet; ``valid_from`` is when
    the relation started to hold (the source's event time, else when it was said).
    """

    subject: str
    predicate: str
    object: str
    source_id: str
    valid_from: datetime
    subject_type: str = "other"
    object_type: str = "other"


@dataclass(frozen=True)
class RelationEdge:
    """A stored relation: its id, the memories it was read from, and its validity window (``valid_until`` None
    while it holds; ``superseded_by`` the edge that closed it).
    """

    id: int
    subject: str
    predicate: str
    object: str
    valid_from: datetime
    valid_until: datetime | None = None
    superseded_by: int | None = None
    sources: tuple[str, ...] = ()

    @property
    def is_current(self) -> bool:
        return self.valid_until is None


@dataclass(frozen=True)
class EntityNode:
    """An entity node: canonical name, node type, display form, the aliases that resolve to it, and how many
    memories mention it.
    """

    name: str
    type: str
    display: str
    aliases: tuple[str, ...] = ()
    mentions: int = 0


@dataclass(frozen=True)
class Mention:
    """A has-element edge: memory ``memory_id`` involves entity ``entity`` (``said_by`` when the entity said it)."""

    memory_id: str
    entity: str
    said_by: bool = False


@dataclass(frozen=True)
class GraphSlice:
    """The part of a user's graph around some seeds, fetched in a few queries for one search.

    ``degree`` counts, for each entity in the slice, every memory of the user that involves it (not only those in
    the slice), so that hubs (a speaker of every other turn) can be weighed down.
    """

    mentions: tuple[Mention, ...] = ()
    relations: tuple[RelationEdge, ...] = ()
    degree: Mapping[str, int] = field(default_factory=dict)
