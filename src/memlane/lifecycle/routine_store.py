"""Writing detected routines as memories of kind ``routine``: new ones inserted, changed ones updated in place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from memlane.embedding.base import Vectors
from memlane.ids import new_id
from memlane.lifecycle.distill import typed_hash
from memlane.lifecycle.routines import Routine, detect_routines
from memlane.models import Filters, HistoryEntry, HistoryEvent, MemoryItem, MemoryKind, SourceRef, utcnow
from memlane.store.base import RecordReader, RecordWriter


class RoutineStore(RecordReader, RecordWriter, Protocol):
    """What storing routines uses of a store."""


def _item(user_id: str, routine: Routine, by_id: dict[str, MemoryItem]) -> MemoryItem:
    now = utcnow()
    sources = [by_id[i] for i in routine.sources if i in by_id]
    return MemoryItem(
        id=new_id(),
        user_id=user_id,
        kind=MemoryKind.ROUTINE,
        speaker=routine.who if sources and sources[0].speaker else None,
        text=routine.text,
        timestamp=routine.last,
        created_at=now,
        updated_at=now,
        event_time=routine.first,
        importance=0.5,
        confidence=routine.confidence,
        content_hash=typed_hash(user_id, None, MemoryKind.ROUTINE, routine.text),
        sources=[
            SourceRef(memory_id=s.id, role=s.role, name=s.speaker, timestamp=s.timestamp, metadata=s.metadata)
            for s in sources
        ],
        metadata={
            "subject": routine.who,
            "attribute": routine.attribute,
            "value": routine.weekday or routine.part_of_day or "regularly",
            "occurrences": routine.occurrences,
        },
        valid_from=routine.first,
    )


def store_routines(
    store: RoutineStore,
    user_id: str,
    min_occurrences: int,
    *,
    insert: Callable[[Sequence[MemoryItem]], None],
    embed: Callable[[Sequence[str]], Vectors],
    index_text: Callable[[MemoryItem], str],
) -> list[MemoryItem]:
    """Detect the user's routines and store them; returns the current routine memories, most confident first."""
    turns = [m for m in store.iter_items(user_id) if m.kind is MemoryKind.MESSAGE]
    by_id = {m.id: m for m in turns}
    found = detect_routines(turns, min_occurrences=min_occurrences)
    stored = {
        (m.metadata.get("subject"), m.metadata.get("attribute")): m
        for m in store.list(user_id, Filters(kind=MemoryKind.ROUTINE), 1_000_000, 0)
    }
    fresh: list[MemoryItem] = []
    out: list[MemoryItem] = []
    for routine in found:
        item = _item(user_id, routine, by_id)
        old = stored.get((routine.who, routine.attribute))
        if old is None:
            fresh.append(item)
            out.append(item)
        elif old.text == item.text:
            out.append(old)
        else:
            new = old.model_copy(
                update={
                    "text": item.text,
                    "confidence": item.confidence,
                    "sources": item.sources,
                    "metadata": item.metadata,
                    "timestamp": item.timestamp,
                    "updated_at": item.updated_at,
                    "content_hash": item.content_hash,
                }
            )
            entry = HistoryEntry(
                memory_id=old.id, event=HistoryEvent.UPDATE, at=new.updated_at, old_text=old.text, new_text=new.text
            )
            body = index_text(new)
            store.replace(new, body, embed([body]), entry)
            out.append(new)
    insert(fresh)
    return sorted(out, key=lambda m: -m.confidence)
