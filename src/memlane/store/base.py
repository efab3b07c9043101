"""Store capabilities as small protocols: each consumer is typed by the ones it uses; a backend implements them all.

Nothing here names a backend or a query language: ids are memory ids, never a backend's row keys.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memlane.embedding.base import Vectors
from memlane.models import (
    Compaction,
    Filters,
    HistoryEntry,
    HistoryEvent,
    Job,
    MemoryItem,
    MemoryKind,
)
from memlane.records.entities import AliasRow
from memlane.records.graph import RelationClaim
from memlane.store.indexes import (
    CandidateIndex,
    EntityIndex,
    GraphIndex,
    StructuredIndex,
    TextIndex,
    ValidityIndex,
    VectorIndex,
    VectorStore,
)
from memlane.store.logs import (
    Archive,
    BulkLoad,
    FeedbackLog,
    HistoryLog,
    JobQueue,
    SecurityLog,
    StoreTransfer,
)
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.records import (
    AccessUse,
)
from memlane.store.sourced import SourcedIndex
from memlane.store.timeline import TimelineIndex


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
        taught: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Store items with their text-index bodies and vectors (and users' entity-table rows), all or nothing.

        ``jobs`` are enqueued in the same transaction (a running one leased under ``claim``); ``changes`` adds
        details to each item's history record; ``relations`` are each user's graph relations read from the items;
        ``taught`` the aliases each item (by id) taught, whose sources it becomes: an alias whose last source is
        erased leaves the entity table (an alias with no recorded source, as before sources were kept, stays).
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
        taught: Mapping[str, Sequence[str]] | None = None,
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
        taught: Sequence[str] | None = None,
    ) -> None:
        """Overwrite a memory (same id and user); a new ``index_text``/``vector`` re-indexes it. ``relations``
        (when given) replace the graph relations this memory is a source of, ``taught`` (when given) the aliases.
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

    def compact(self) -> Compaction:
        """Rewrite the store's files from their live content: no byte of a deleted memory stays in them, and the
        space is given back. Other writers (and, on PostgreSQL, readers of the table being rewritten) wait.
        """
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
    TimelineIndex,
    SourcedIndex,
    Protocol,
):
    """Every capability: what a backend implements and what the ``Memory`` facade holds."""


__all__ = [
    "Archive",
    "BulkLoad",
    "CandidateIndex",
    "EntityIndex",
    "FeedbackLog",
    "GraphIndex",
    "HistoryLog",
    "JobQueue",
    "RecordReader",
    "RecordWriter",
    "SecurityLog",
    "SourcedIndex",
    "Store",
    "StoreInfo",
    "StoreTransfer",
    "StructuredIndex",
    "TextIndex",
    "TimelineIndex",
    "ValidityIndex",
    "VectorIndex",
    "VectorStore",
]
