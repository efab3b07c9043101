"""What the two SQL stores' writers share: ``write``'s arguments checked and gathered into one ``WriteSet`` (each
backend writes a set in its own way, in one transaction), and ``insert`` as a ``write`` with nothing else in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memlane.embedding.base import Vectors
from memlane.errors import StoreError
from memlane.models import HistoryEntry, HistoryEvent, Job, MemoryItem
from memlane.records.entities import AliasRow
from memlane.records.graph import RelationClaim
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.passages import PassageVectors


@dataclass(frozen=True, slots=True)
class WriteSet:
    """One ``write``: new items with their index texts and vectors, changed items, aliases, relations, taught
    aliases, documents' passages, jobs enqueued (a running one under ``claim``) and a job finished.
    """

    items: Sequence[MemoryItem]
    index_texts: Sequence[str]
    vectors: Vectors
    event: HistoryEvent
    aliases: Mapping[str, Sequence[AliasRow]]
    jobs: Sequence[Job]
    changes: Mapping[str, Mapping[str, Any]]
    updates: Sequence[tuple[MemoryItem, HistoryEntry]]
    finish: JobOutcome | None
    claim: JobClaim | None
    relations: Mapping[str, Sequence[RelationClaim]]
    taught: Mapping[str, Sequence[str]]
    passages: Mapping[str, PassageVectors] | None


class SQLWrites:
    """``write`` and ``insert`` (``RecordWriter``, ``PassageWriter``) over the backend's ``_write``."""

    def _write(self, w: WriteSet) -> None:
        """Write the set in one transaction (nothing when the finished job is fenced)."""
        raise NotImplementedError

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
        passages: Mapping[str, PassageVectors] | None = None,
    ) -> None:
        """New items (with their index entries and documents' passages), changed items (no re-index), jobs enqueued
        (a running one under ``claim``) and a job finished: all in one transaction, or nothing when the finished job
        is fenced.
        """
        if not (len(items) == len(index_texts) == len(vectors)):
            raise StoreError("insert needs one index text and one vector per item")
        if not items and not updates and not jobs and finish is None and not any((relations or {}).values()):
            return
        self._write(
            WriteSet(
                items,
                index_texts,
                vectors,
                event,
                aliases or {},
                jobs,
                changes or {},
                updates,
                finish,
                claim,
                relations or {},
                taught or {},
                passages,
            )
        )

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
        self.write(
            items,
            index_texts,
            vectors,
            event=event,
            aliases=aliases,
            jobs=jobs,
            changes=changes,
            claim=claim,
            relations=relations,
            taught=taught,
            passages=passages,
        )
