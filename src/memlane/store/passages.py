"""The ``PassageIndex`` capability: a document's passages (spans and vectors), written with the document.

A backend that implements it stores every passage of a ``kind=document`` memory in the transaction of the memory
and removes them with it (delete, a text update, eviction, erasure); one that does not keeps one vector per memory
(``memlane.documents`` falls back to it and says so in the log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memlane.embedding.base import Vectors
from memlane.models import HistoryEvent, Job, MemoryItem
from memlane.records.entities import AliasRow
from memlane.records.graph import RelationClaim
from memlane.records.passages import Span
from memlane.store.outcome import JobClaim


@dataclass(frozen=True, slots=True)
class PassageVectors:
    """One document's passages to store: their spans in its text and one vector each (same order)."""

    spans: Sequence[Span]
    vectors: Vectors


@dataclass(frozen=True, slots=True)
class PassageMatrix:
    """Every stored passage of one user, grouped by document: what the dense dimension scans.

    Row ``i`` is passage ``ordinals[i]`` of memory ``ids[i]``, ``text[starts[i]:ends[i]]``; the rows of one memory
    are consecutive, ``firsts`` holds the first row of each memory and ``counts`` how many it has.
    """

    version: Any
    ids: list[str]
    ordinals: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    firsts: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    vectors: Vectors
    memories: list[str] = field(default_factory=list)  # the memory of each group of rows, in ``firsts`` order
    group_of: dict[str, int] = field(default_factory=dict)  # each memory's group

    def __post_init__(self) -> None:
        self.memories.extend(self.ids[int(i)] for i in self.firsts)
        self.group_of.update((m, g) for g, m in enumerate(self.memories))


@runtime_checkable
class PassageIndex(Protocol):
    """Storing and reading documents' passages, scoped by user."""

    def passage_version(self, user_id: str) -> Any:
        """A value that changes whenever this user's passages may have (a cached matrix is stale when it differs)."""
        ...

    def passage_matrix(self, user_id: str) -> PassageMatrix:
        """Every passage of this user (empty arrays when none)."""
        ...

    def unpassaged(self, user_id: str | None, limit: int) -> list[MemoryItem]:
        """Documents (of one user, or of all) that hold no passage: stored before, restored, or re-embedded."""
        ...

    def write_passages(self, user_id: str, passages: Mapping[str, PassageVectors]) -> None:
        """Replace the passages of these documents (by memory id; a document gone meanwhile is skipped)."""
        ...

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
        passages: Mapping[str, PassageVectors] | None = None,
    ) -> None:
        """``RecordWriter.insert`` with each document's passages (by memory id), in the same transaction."""
        ...
