"""Store capabilities that index memories: full text, vectors, the dimensions' candidate facts, entities,
structured queries, validity and the graph (protocols; re-exported by ``memlane.store.base``).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from memlane.embedding.base import Vectors
from memlane.models import (
    Filters,
    MemoryItem,
)
from memlane.records.entities import AliasRow
from memlane.records.graph import EntityNode, GraphSlice, RelationEdge
from memlane.records.structured import EntityRows, EntitySelect, MemoryRows, MemorySelect
from memlane.store.records import (
    CandidateFacts,
    Contradiction,
    Position,
    ScoredIds,
)


@runtime_checkable
class TextIndex(Protocol):
    """Full-text (BM25) search over the memories' index bodies."""

    def text_search(self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters) -> ScoredIds:
        """Memories matching any of ``terms`` with their BM25 score (higher is better), best first (ties: the
        earlier stored first): the best ``limit``, or every match when ``limit`` is None. Only the best ``limit``
        leave the index.
        """
        ...

    def text_scores(
        self, user_id: str, terms: Sequence[str], memory_ids: Sequence[str], filters: Filters
    ) -> dict[str, float]:
        """The BM25 score ``text_search`` gives each of the given memories that matches ``terms`` and passes
        ``filters`` (the others are left out), without scoring or returning any other match.
        """
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Dense vectors of memories: similarity search and the identity of the model that made them."""

    def vector_search(self, user_id: str, query: Vectors, limit: int, filters: Filters) -> ScoredIds:
        """Top ``limit`` memories by cosine similarity to ``query``."""
        ...

    def vector_scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of ``query`` to each given memory."""
        ...


@runtime_checkable
class VectorStore(VectorIndex, Protocol):
    """The vectors as stored data: the embedding cache, the model identity and re-embedding."""

    def cached_vectors(self, embed_hashes: Sequence[str]) -> dict[str, Vectors]:
        """Vectors already stored for texts with these hashes (the embedding cache)."""
        ...

    def embedder_identity(self) -> tuple[str, int] | None:
        """The (identity, dim) the vectors were made with, or None for an empty store."""
        ...

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Block until background index work is done (``timeout`` seconds at most); whether it is."""
        ...

    def set_embedder_identity(self, identity: str, dim: int) -> None:
        """Record the model identity (only for a store without vectors, or by reindex)."""
        ...

    def reindex_begin(self, identity: str, dim: int) -> None:
        """Start (or resume, for the same model) writing new vectors beside the live ones."""
        ...

    def reindex_pending(self, after: str | None, limit: int) -> builtins.list[MemoryItem]:
        """Up to ``limit`` memories stored after memory ``after`` (from the first when ``None``) still lacking a
        new vector.
        """
        ...

    def reindex_stage(self, vectors: Mapping[str, Vectors], identity: str, dim: int, *, final: bool) -> bool:
        """Write new vectors (by memory id) beside the live ones; with ``final`` switch to them and record the
        model in the same transaction when none is missing (returns whether it switched).
        """
        ...


@runtime_checkable
class CandidateIndex(Protocol):
    """What the multi-dimensional read path asks about a pool of candidates beyond text and vectors."""

    def candidate_facts(
        self, user_id: str, memory_ids: Sequence[str], entities: Sequence[str] = ()
    ) -> dict[str, CandidateFacts]:
        """The facts of each given memory of this user, with which of ``entities`` (canonical names) it involves."""
        ...

    def neighbours(self, user_id: str, memory_ids: Sequence[str], width: int) -> dict[str, Position]:
        """The position of every memory within ``width`` positions of one of the given ones in its session
        (the given ones included).
        """
        ...

    def matching(self, user_id: str, memory_ids: Sequence[str], filters: Filters) -> set[str]:
        """Those of the given memories that pass ``filters``."""
        ...


@runtime_checkable
class EntityIndex(Protocol):
    """A user's entity table (aliases) and which entities the user's memories involve."""

    def entity_aliases(self, user_id: str) -> builtins.list[AliasRow]:
        """The user's entity table."""
        ...

    def resolve_aliases(self, user_id: str, keys: Sequence[str]) -> dict[str, str]:
        """The canonical entity each of ``keys`` is an alias of (keys that are no alias are left out)."""
        ...

    def speakers(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        """Those of ``names`` (canonical forms) that said some memory of this user."""
        ...

    def known_entities(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        """Those of ``names`` (canonical forms) that some memory of this user involves."""
        ...


@runtime_checkable
class StructuredIndex(Protocol):
    """The primitives of structured questions (``memlane.structured``): typed selections compiled to bound SQL."""

    def select_memories(self, user_id: str, select: MemorySelect) -> MemoryRows:
        """The memories of this user matching ``select.match``, in time order, with the statement that was run."""
        ...

    def select_entities(self, user_id: str, select: EntitySelect) -> EntityRows:
        """The entities this user's matching memories involve, most involved first, with the statement run."""
        ...


@runtime_checkable
class ValidityIndex(Protocol):
    """Which messages stated a claim that a later memory superseded (written in the supersession's transaction)."""

    def contradicted(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Contradiction]:
        """The links of those of ``memory_ids`` whose claim was superseded (the earliest supersession each)."""
        ...


@runtime_checkable
class GraphIndex(Protocol):
    """A user's knowledge graph: entity nodes (the entity table), has-element edges (which entities each memory
    involves), typed relation edges with their source memories and validity, and curation of entity identity.

    Has-previous edges (succession within a session) are the memories' positions (``CandidateIndex.neighbours``).
    Deleting memories removes the relations read only from them and the entities nothing involves any more.
    """

    def graph_slice(
        self, user_id: str, memory_ids: Sequence[str], entities: Sequence[str], *, max_degree: int
    ) -> GraphSlice:
        """The has-element edges of ``memory_ids``; those of every memory involving one of their entities or of
        ``entities``, for entities involved in at most ``max_degree`` memories; the current relations among them.
        """
        ...

    def relations(
        self, user_id: str, entities: Sequence[str] = (), *, current_only: bool = False
    ) -> builtins.list[RelationEdge]:
        """The relations whose subject or object is one of ``entities`` (every relation when none is given)."""
        ...

    def entity_nodes(self, user_id: str, names: Sequence[str]) -> builtins.list[EntityNode]:
        """The nodes of these canonical names that this user's graph holds (unknown names are left out)."""
        ...

    def entity_memories(self, user_id: str, entity: str, limit: int) -> builtins.list[str]:
        """Ids of the latest ``limit`` memories that involve ``entity``."""
        ...

    def merge_entities(self, user_id: str, source: str, target: str) -> int:
        """Make ``source`` an alias of ``target``: its mentions, aliases and relations move; returns the memories
        moved. ``NotFoundError`` when either is unknown.
        """
        ...

    def split_entity(self, user_id: str, entity: str, new_name: str, memory_ids: Sequence[str]) -> int:
        """Move the mentions of ``entity`` in ``memory_ids`` (and the relations read only from them) to a new entity
        ``new_name`` of the same type; returns how many memories moved.
        """
        ...
