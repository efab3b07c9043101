"""The knowledge graph of a user's memories: an entity's neighbourhood, typed relations, merging and splitting
entities, and routines detected in the user's turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memlane.errors import ValidationError
from memlane.graph.neighbourhood import Neighbourhood, NeighbourhoodStore, neighbourhood, resolve_entity
from memlane.lifecycle.routine_store import RoutineStore, store_routines
from memlane.models import HistoryEvent, MemoryItem
from memlane.records.entities import canonical
from memlane.records.graph import RelationEdge
from memlane.records.keys import index_text
from memlane.scope import unscope_all
from memlane.security.validation import check_bool, check_int, check_text
from memlane.services.core import Core
from memlane.services.indexing import Indexer
from memlane.services.scope import Scope


class GraphStore(NeighbourhoodStore, RoutineStore, Protocol):
    """What the graph views use: the graph and entity indexes, and rows for routines."""


class Graph:
    """Views and edits of a user's entity graph, and routine detection."""

    def __init__(self, core: Core, store: GraphStore, indexer: Indexer) -> None:
        self.core = core
        self.store = store
        self.indexer = indexer

    def _name(self, value: object, what: str) -> str:
        return check_text(value, max_chars=self.core.limits.id_chars, what=what)

    def graph(self, scope: Scope, entity: str, *, limit: int) -> Neighbourhood:
        """The neighbourhood of an entity; ``NotFoundError`` when unknown."""
        entity = self._name(entity, "entity")
        check_int(limit, what="limit", low=1, high=self.core.limits.top_k)
        return neighbourhood(self.store, scope.key, entity, limit=limit)

    def relations(self, scope: Scope, *, entity: str | None, current_only: bool) -> list[RelationEdge]:
        """The typed relations of this user's graph (those of one entity when given)."""
        check_bool(current_only, what="current_only")
        names = [] if entity is None else [resolve_entity(self.store, scope.key, self._name(entity, "entity"))]
        return self.store.relations(scope.key, names, current_only=current_only)

    def merge_entities(self, scope: Scope, source: str, target: str) -> int:
        """Make ``source`` the same entity as ``target``; returns how many memories now name ``target``."""
        a = resolve_entity(self.store, scope.key, self._name(source, "source"))
        b = resolve_entity(self.store, scope.key, self._name(target, "target"))
        with self.core.lock:
            return self.store.merge_entities(scope.key, a, b)

    def split_entity(self, scope: Scope, entity: str, new_name: str, *, memory_ids: Sequence[str]) -> int:
        """Split the memories in ``memory_ids`` off ``entity`` into a new entity ``new_name``; returns how many."""
        name = resolve_entity(self.store, scope.key, self._name(entity, "entity"))
        new = canonical(self._name(new_name, "new_name"))
        if isinstance(memory_ids, str) or not all(isinstance(i, str) for i in memory_ids):
            raise ValidationError("memory_ids must be a list of memory id strings")
        with self.core.lock:
            return self.store.split_entity(scope.key, name, new, list(memory_ids))

    def routines(self, scope: Scope, *, min_occurrences: int) -> list[MemoryItem]:
        """Detect recurring actions in this user's turns and store each as a memory of kind ``routine`` (its
        sources the supporting turns, its confidence from how many days and how regular); a routine already
        stored is updated when its evidence changed. Returns the user's current routines.
        """
        check_int(min_occurrences, what="min_occurrences", low=2, high=1_000_000)
        with self.core.lock:
            found = store_routines(
                self.store,
                scope.key,
                min_occurrences,
                insert=lambda items: self.indexer.insert(items, HistoryEvent.EXTRACT),
                embed=self.indexer.embed,
                index_text=index_text,
            )
        return unscope_all(found)
