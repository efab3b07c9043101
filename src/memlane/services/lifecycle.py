"""Lifecycle: changing, deleting and erasing memories, their history, the archive of evicted ones, capacity, and
rewriting the store's files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from memlane.documents.service import Documents
from memlane.errors import NotFoundError, ValidationError
from memlane.graph.relations import relations_by_user
from memlane.lifecycle.distill import Distiller, typed_hash
from memlane.models import (
    ArchivedMemory,
    Compaction,
    HistoryEntry,
    HistoryEvent,
    MemoryItem,
    MemoryKind,
    utcnow,
)
from memlane.records.entities import AliasRow
from memlane.records.keys import content_hash, index_text
from memlane.scope import unscope, unscope_all
from memlane.security.validation import check_bool, check_float, check_id, check_metadata, check_text
from memlane.services.core import Core
from memlane.services.indexing import Indexer
from memlane.services.scope import Scope
from memlane.store.base import (
    Archive,
    EntityIndex,
    HistoryLog,
    RecordReader,
    RecordWriter,
    SecurityLog,
    StoreInfo,
    VectorStore,
)


class LifecycleStore(
    RecordReader, RecordWriter, Archive, HistoryLog, SecurityLog, EntityIndex, VectorStore, StoreInfo, Protocol
):
    """What changing and erasing memories uses: rows, the archive, history, flags, the entity table, compaction."""


class Lifecycle:
    """Update, delete, history, archive and restore, capacity, compaction."""

    def __init__(
        self, core: Core, store: LifecycleStore, indexer: Indexer, distiller: Distiller, documents: Documents
    ) -> None:
        self.documents = documents
        self.core = core
        self.store = store
        self.indexer = indexer
        self.distiller = distiller

    def _id(self, memory_id: object) -> str:
        return check_id(memory_id, what="memory_id", max_chars=self.core.limits.id_chars)

    def archive(self, scope: Scope, *, limit: int, offset: int) -> list[ArchivedMemory]:
        """Memories of this user evicted beyond capacity, most recently archived first."""
        limit, offset = self.core.page(limit, offset)
        return unscope_all(self.store.archived(scope.key, limit, offset))

    def restore(self, scope: Scope, memory_id: str) -> MemoryItem:
        """Bring an archived memory back into every index."""
        restored = self.store.restore(scope.key, self._id(memory_id), utcnow())
        self.documents.repassage([restored])  # a document's passages left with it
        return unscope(restored)

    def forget(self, scope: Scope, *, hard: bool) -> list[str]:
        """Enforce ``config.capacity`` now: evict the lowest survival scores to the archive (destroy if ``hard``)."""
        check_bool(hard, what="hard")
        with self.core.consolidating(scope.key):
            return self.distiller.enforce_capacity(scope.key, hard=hard)

    def history(self, scope: Scope, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change of a memory, oldest first; ``NotFoundError`` if this user never had it."""
        memory_id = self._id(memory_id)
        entries = self.store.history(scope.key, memory_id)
        if not entries:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        return entries

    def update(
        self,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None,
        metadata: Mapping[str, Any] | None,
        importance: float | None,
    ) -> MemoryItem:
        """Change a memory's text (re-indexed), metadata (replaced) or importance; recorded in history."""
        limits = self.core.limits
        user_id, memory_id = scope.key, self._id(memory_id)
        if text is not None:
            text = check_text(text, max_chars=limits.text_chars)
        if metadata is not None:
            metadata = check_metadata(metadata, "metadata", limits)
        if importance is not None:
            importance = check_float(importance, what="importance", low=0.0, high=1.0)
        old = self.store.get(user_id, memory_id)
        changes: dict[str, Any] = {}
        new = old.model_copy(deep=True)
        if text is not None:
            new.text = text
            new.content_hash = (
                content_hash(user_id, old.agent_id, old.session_id, old.kind.value, new.text)
                if old.kind is MemoryKind.MESSAGE
                else typed_hash(user_id, old.agent_id, old.kind, new.text)
            )
            changes["text"] = True
            screened = self.indexer.screen(user_id, [new])
        if metadata is not None:
            new.metadata = dict(metadata)
            changes["metadata"] = {"old": old.metadata, "new": new.metadata}
        if importance is not None:
            new.importance = importance
            changes["importance"] = {"old": old.importance, "new": new.importance}
        if not changes:
            raise ValidationError("update needs at least one of text, metadata or importance")
        now = utcnow()
        new.updated_at = now
        body = vector = None
        aliases: list[AliasRow] = []
        taught: dict[str, list[str]] | None = None
        if text is not None:
            self.core.check_embedder()
            body = index_text(new)
            vectors = self.indexer.embed([body])
            vector = vectors[0]
            kept_importance = new.importance
            new.event_time = new.event_end = None
            taught = {}
            aliases = self.indexer.enrich([new], vectors, taught=taught).get(user_id, [])
            if importance is not None:
                new.importance = kept_importance
        entry = HistoryEntry(
            memory_id=memory_id,
            event=HistoryEvent.UPDATE,
            at=now,
            old_text=old.text if text is not None else None,
            new_text=new.text if text is not None else None,
            changes=changes,
        )
        relations = None
        if text is not None:  # the relations the old text stated go; the new text's are read
            relations = relations_by_user([new], {user_id: aliases}, self.store).get(user_id, [])
        self.store.replace(
            new,
            body,
            vector,
            entry,
            aliases,
            relations=relations,
            taught=None if taught is None else taught.get(new.id, []),
        )
        if text is not None:  # the old text's flag and sealed original no longer apply
            if memory_id in screened.clean:
                self.store.clear_flags(user_id, [memory_id])
            if not any(o.memory_id == memory_id for o in screened.originals):
                self.store.drop_originals(user_id, [memory_id])
            self.core.forget_cached_text()  # the replaced text may sit in them
            self.documents.repassage([new])  # a document's passages went with its old text
        return unscope(new)

    def delete(self, scope: Scope, memory_id: str) -> list[str]:
        """Remove a memory (and typed memories extracted from it alone); returns the ids removed."""
        memory_id = self._id(memory_id)
        with self.core.lock:
            removed = self.store.delete(scope.key, memory_id, utcnow())
        self.core.forget_cached_text()
        return removed

    def delete_all(self, scope: Scope) -> int:
        """Remove every memory and all history of one user; returns how many memories went."""
        removed = self.store.delete_user(scope.key)
        self.core.forget_cached_text()
        return removed

    def wait_for_index(self, timeout: float | None) -> bool:
        """Block until background index work is done, at most ``timeout`` seconds; whether it is.

        A scope that grows past ``IndexSettings.exact_below`` vectors (50,000) gets its HNSW graph built on a
        background thread while exact search keeps answering, and a scope of 20,000 memories or more gets its
        in-memory read model (BM25 postings and candidate facts) built on one at its first search while the
        tables answer; call this after a bulk import or at start-up to have both ready before serving. Never
        needed for correct results.
        """
        if timeout is not None:
            timeout = check_float(timeout, what="timeout", low=0.0, high=float(7 * 24 * 3600))
        return self.store.wait_for_index(timeout)

    def compact(self) -> Compaction:
        """Rewrite the store's files from their live content, so that no byte of a deleted memory stays in them
        (SQLite: ``VACUUM``; PostgreSQL: ``VACUUM FULL`` of memlane's tables, which locks each table while it is
        rewritten). What a delete leaves is already unreachable to every read; this removes it from the disk too.
        """
        self.core.write_access()  # the searches' counts first: the rewrite then holds them
        return self.store.compact()
