"""What the two SQL stores' writers share: ``insert`` as a ``write`` with nothing else in it, and the check that a
write pairs its items with their index texts and vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memlane.embedding.base import Vectors
from memlane.errors import StoreError
from memlane.models import HistoryEvent, Job, MemoryItem
from memlane.records.entities import AliasRow
from memlane.records.graph import RelationClaim
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.passages import PassageVectors


def anything_to_write(
    items: Sequence[MemoryItem],
    index_texts: Sequence[str],
    vectors: Vectors,
    updates: Sequence[object],
    jobs: Sequence[Job],
    finish: JobOutcome | None,
    relations: Mapping[str, Sequence[RelationClaim]] | None,
) -> bool:
    """Whether a ``write`` has anything to do; ``StoreError`` when its items, texts and vectors do not pair up."""
    if not (len(items) == len(index_texts) == len(vectors)):
        raise StoreError("insert needs one index text and one vector per item")
    return bool(items or updates or jobs or finish is not None or any((relations or {}).values()))


class SQLInsert:
    """``insert`` (``RecordWriter`` and ``PassageWriter``): the backend's ``write`` with no updates or outcome."""

    write: Callable[..., None]

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
