"""Store capabilities as small protocols: each consumer is typed by the ones it uses; a backend implements them all.

Nothing here names a backend or a query language: ids are memory ids, never a backend's row keys.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memlane.embedding.base import Vectors
from memlane.enrich.entities import AliasRow
from memlane.graph.types import EntityNode, GraphSlice, RelationClaim, RelationEdge
from memlane.models import (
    ArchivedMemory,
    Filters,
    FlaggedMemory,
    HistoryEntry,
    HistoryEvent,
    InjectionFlag,
    Job,
    JobState,
    MemoryItem,
    MemoryKind,
)
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.records import (
    AccessUse,
    CandidateFacts,
    Contradiction,
    Feedback,
    Position,
    ScoredIds,
    SealedOriginal,
    StoredEntry,
    StoredRelation,
)
from memlane.structured.query import EntityRows, EntitySelect, MemoryRows, MemorySelect


@runtime_checkable
class RecordReader(Protocol):
    """Reading memory rows, scoped by user."""

    def get(self, user_id: str, memory_id: str) -> MemoryItem:
        """One memory of this user; ``NotFoundError`` when absent (or another user's)."""
        ...

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]:
        """The memories of this user among ``memory_ids`` (absent ones are left out)."""
        ...

    def list(self, user_id: str, filters: Filters, limit: int, offset: int) -> list[MemoryItem]:
        """Memories of this user matching ``filters``, oldest first."""
        ...

    def find_hashes(self, user_id: str, hashes: Sequence[str]) -> dict[str, MemoryItem]:
        """The memory of this user stored under each content hash (absent hashes are left out)."""
        ...

    def count_kinds(self, user_id: str, kinds: Sequence[MemoryKind]) -> int:
        """How many memories of these kinds this user holds."""
        ...

    def iter_items(self, user_id: str | None = None) -> Iterator[MemoryItem]:
        """Every memory (of one user, or of all), in insertion order."""
        ...


@runtime_checkable
class RecordWriter(Protocol):
    """Writing memory rows. Every write is one transaction with its index entries, history and jobs."""

    def insert(
        self,
        items: Sequence[MemoryItem],
        index_texts: Sequence[str],
        vectors: Vectors,
        event: HistoryEvent = HistoryEvent.ADD,
        aliases: Mapping[str, Sequence[AliasRow]] | None = None,
        *,
        jobs: Sequence[Job] = (),
        changes: Mapping[str, Mapping[str, Any]] | None = None,
        claim: JobClaim | None = None,
        relations: Mapping[str, Sequence[RelationClaim]] | None = None,
    ) -> None:
        """Store items with their text-index bodies and vectors (and users' entity-table rows), all or nothing.

        ``jobs`` are enqueued in the same transaction (a running one leased under ``claim``); ``changes`` adds
        details to each item's history record; ``relations`` are each user's graph relations read from the items.
        """
        ...

    def write(
        self,
        items: Sequence[MemoryItem],
        index_texts: Sequence[str],
        vectors: Vectors,
        *,
        event: HistoryEvent = HistoryEvent.ADD,
        aliases: Mapping[str, Sequence[AliasRow]] | None = None,
        jobs: Sequence[Job] = (),
        changes: Mapping[str, Mapping[str, Any]] | None = None,
        updates: Sequence[tuple[MemoryItem, HistoryEntry]] = (),
        finish: JobOutcome | None = None,
        claim: JobClaim | None = None,
        relations: Mapping[str, Sequence[RelationClaim]] | None = None,
    ) -> None:
        """``insert`` plus changed items (fields only, no re-index) and a job's outcome, in one transaction;
        nothing at all when the job is fenced (``JobFencedError``).
        """
        ...

    def replace(
        self,
        item: MemoryItem,
        index_text: str | None,
        vector: Vectors | None,
        entry: HistoryEntry,
        aliases: Sequence[AliasRow] = (),
        *,
        relations: Sequence[RelationClaim] | None = None,
    ) -> None:
        """Overwrite a memory (same id and user); a new ``index_text``/``vector`` re-indexes it. ``relations``
        (when given) replace the graph relations this memory is a source of.
        """
        ...

    def delete(self, user_id: str, memory_id: str, at: datetime) -> builtins.list[str]:
        """Remove a memory from rows, text index and vectors; erase text from its history.

        Typed memories whose only source was this memory are removed too; the others lose that source.
        Returns the ids removed, the one asked for first.
        """
        ...

    def delete_user(self, user_id: str) -> int:
        """Remove everything of one user (history, jobs, archive, aliases, feedback); returns the memories removed."""
        ...

    def record_access(self, user_id: str, uses: Mapping[str, AccessUse]) -> None:
        """Add each memory's new uses to its access count and set its last access time (ids not held: ignored)."""
        ...


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


@runtime_checkable
class FeedbackLog(Protocol):
    """Whether a returned memory was useful for a query: the labels ``memlane tune`` learns weights from."""

    def add_feedback(self, user_id: str, query: str, memory_id: str, useful: bool, at: datetime) -> None:
        """Record one judgement; ``NotFoundError`` if the user has no such memory."""
        ...

    def feedback(self, user_id: str | None = None) -> builtins.list[Feedback]:
        """The latest judgement of each (user, query, memory), oldest first."""
        ...


@runtime_checkable
class JobQueue(Protocol):
    """The durable queue of background jobs, in the same database as the memories."""

    def enqueue(self, job: Job) -> None:
        """Add a job."""
        ...

    def claim_job(self, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The oldest queued job (or running one whose lease lapsed or whose owner ``is_dead``), now running under
        ``claim`` with its attempt counted; ``None`` when there is none.
        """
        ...

    def claim_job_id(self, job_id: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The job ``job_id`` now running under ``claim`` (its attempt counted) if it is queued, whatever its
        ``not_before``, or running under a lapsed lease or a dead owner; ``None`` when it is done, failed, held
        by a live owner, or gone. This is how a broker's delivery runs the job it names, at most once at a time.
        """
        ...

    def retry_job_later(self, job_id: str, owner: str, error: str, not_before: datetime) -> bool:
        """Queue again a job that failed an attempt under ``owner`` (or that its handler recorded failed), held
        back from the queue scan until ``not_before``; ``False`` when it was cancelled or taken over.
        """
        ...

    def unhold_job(self, job_id: str) -> bool:
        """Let the queue scan take a queued job now (its ``not_before`` cleared)."""
        ...

    def renew_job(self, job_id: str, claim: JobClaim) -> bool:
        """Extend a job's lease; ``False`` when ``claim.owner`` no longer holds it."""
        ...

    def release_job(self, job_id: str, owner: str) -> bool:
        """Queue again a job ``owner`` holds, its attempt not counted."""
        ...

    def acquire_lock(self, name: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> bool:
        """Take or extend a named lock that holds across processes; ``False`` while another live owner has it."""
        ...

    def release_lock(self, name: str, owner: str) -> None:
        """Let go of a named lock if ``owner`` holds it."""
        ...

    def finish_job(self, outcome: JobOutcome) -> None:
        """Record a job's outcome (``JobFencedError`` when its owner no longer holds it)."""
        ...

    def job(self, user_id: str, job_id: str) -> Job:
        """One job of this user; ``NotFoundError`` when absent (or another user's)."""
        ...

    def jobs(self, user_id: str | None, state: JobState | None = None, limit: int = 1000) -> builtins.list[Job]:
        """Jobs of one user (or all), oldest first."""
        ...

    def pending_jobs(self) -> int:
        """How many jobs are queued or running."""
        ...

    def requeue_jobs(self, states: tuple[JobState, ...], user_id: str | None = None) -> int:
        """Put jobs in these states back in the queue (a failed one with a fresh round of attempts); how many."""
        ...


@runtime_checkable
class Archive(Protocol):
    """Evicted memories, kept whole out of every index, and restorable."""

    def evict(self, user_id: str, memory_ids: Sequence[str], at: datetime, *, hard: bool = False) -> int:
        """Move memories to the archive (destroy them when ``hard``); returns how many went."""
        ...

    def archived(self, user_id: str, limit: int, offset: int) -> builtins.list[ArchivedMemory]:
        """Archived memories of this user, most recently archived first."""
        ...

    def restore(self, user_id: str, memory_id: str, at: datetime) -> MemoryItem:
        """Bring an archived memory back; ``NotFoundError`` when this user has none with that id."""
        ...


@runtime_checkable
class SecurityLog(Protocol):
    """Injection flags of memories and the sealed originals of redacted text, kept by memory id.

    A flag may be written before its memory (so a crash in between leaves the memory flagged, never unflagged);
    both go when the memory is deleted or its user erased, and stay with it in the archive.
    """

    def put_flags(self, user_id: str, flags: Sequence[InjectionFlag]) -> None:
        """Record (or replace) the flags of these memories."""
        ...

    def clear_flags(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the flags of these memories (their text changed and no longer reads as an injection)."""
        ...

    def flags(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, InjectionFlag]:
        """The flags of those of ``memory_ids`` that are flagged."""
        ...

    def flagged(self, user_id: str | None, limit: int, offset: int) -> builtins.list[FlaggedMemory]:
        """Stored memories that are flagged (of one user, or all) with their flags, most recently flagged first."""
        ...

    def put_originals(self, user_id: str, originals: Sequence[SealedOriginal]) -> None:
        """Record (or replace) the sealed originals of redacted memories."""
        ...

    def drop_originals(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the sealed originals of these memories (their text changed)."""
        ...

    def original(self, user_id: str, memory_id: str) -> SealedOriginal | None:
        """The sealed original of one memory, if its text was redacted."""
        ...

    def count_originals(self, user_id: str | None = None) -> int:
        """How many sealed originals are kept (of one user, or all)."""
        ...


@runtime_checkable
class HistoryLog(Protocol):
    """Every recorded change of a memory."""

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEntry]:
        """The changes of one memory, oldest first."""
        ...


@runtime_checkable
class StoreTransfer(Protocol):
    """What copying a whole store (``memlane migrate``) needs beyond the other capabilities; optional for a backend
    (without it a store can still be a migration's target, and its history and graph are then not copied into it;
    flags and sealed originals are written through ``SecurityLog``).
    """

    def user_ids(self) -> builtins.list[str]:
        """Every user holding anything: memories, archived memories, history, feedback or jobs."""
        ...

    def stored_entries(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, StoredEntry]:
        """The index body and vector of each given memory of this user, live or archived (absent ones left out)."""
        ...

    def history_ids(self, user_id: str) -> builtins.list[str]:
        """The memories of this user with recorded history (deleted ones included), in order of first record."""
        ...

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        """Replace the recorded history of one memory with ``entries``, in order (a copy of another store's)."""
        ...

    def stored_relations(self, user_id: str) -> builtins.list[StoredRelation]:
        """Every graph relation of this user, current and closed, with its sources, in order of id."""
        ...

    def put_relations(self, user_id: str, relations: Sequence[StoredRelation]) -> int:
        """Write a copy of another store's relations for a user who has none here, all or nothing: ids are
        renumbered (``superseded_by`` follows), sources are matched by memory id (one not held here is left out,
        and a relation left without any is not written). Returns how many were written; ``ValidationError`` when
        the user already has relations here.
        """
        ...

    def injection_flags(self, user_id: str) -> builtins.list[InjectionFlag]:
        """Every injection flag of this user (live, archived, or not yet written memories), by memory id."""
        ...

    def sealed_originals(self, user_id: str) -> builtins.list[SealedOriginal]:
        """Every sealed PII original of this user, as its sealed bytes (never unsealed here), by memory id."""
        ...


@runtime_checkable
class StoreInfo(Protocol):
    """Where a store lives, how big it is, and closing it."""

    @property
    def location(self) -> str: ...

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only (reads work; writes raise ``StoreError``)."""
        ...

    def size_bytes(self) -> int:
        """Bytes the store takes on disk (0 in memory)."""
        ...

    def pinned(self) -> AbstractContextManager[None]:
        """A read of several steps (one search): other processes' commits are seen as of its start, once."""
        ...

    def count(self, user_id: str | None = None) -> int:
        """How many memories, for one user or in all."""
        ...

    def user_count(self) -> int:
        """How many distinct users hold memories."""
        ...

    def count_by_kind(self, user_id: str | None = None) -> dict[str, int]:
        """Memory counts per kind."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Store(
    RecordReader,
    RecordWriter,
    TextIndex,
    VectorStore,
    CandidateIndex,
    EntityIndex,
    StructuredIndex,
    ValidityIndex,
    GraphIndex,
    FeedbackLog,
    HistoryLog,
    JobQueue,
    Archive,
    SecurityLog,
    StoreInfo,
    Protocol,
):
    """Every capability: what a backend implements and what the ``Memory`` facade holds."""
