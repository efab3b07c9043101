"""``Indexer``: the floor every writer stands on: screen new memories, embed them (the store's vectors as a cache),
fill their write-time dimensions, and store them with their entity rows and graph relations in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from memlane.blas import blas_threads
from memlane.embedding.base import Vectors
from memlane.enrich.aliases import EntityResolver
from memlane.enrich.pipeline import Enricher
from memlane.graph.relations import relations_by_user
from memlane.models import HistoryEvent, Job, MemoryItem
from memlane.records.entities import AliasRow
from memlane.records.keys import index_text
from memlane.security.guard import Guard, Screened, VectorMemo
from memlane.services.core import Core
from memlane.store.base import EntityIndex, RecordWriter, SecurityLog, VectorStore
from memlane.store.outcome import JobClaim
from memlane.store.records import embed_hash

Annotate = Callable[[Sequence[MemoryItem]], dict[str, list[AliasRow]]]


class IndexStore(RecordWriter, VectorStore, EntityIndex, SecurityLog, Protocol):
    """What indexing uses of a store: writing rows, the vector cache and identity, the entity table, flags."""


class Indexer:
    """Screens, embeds, enriches and stores new memories; shared by every path that writes them."""

    def __init__(self, core: Core, store: IndexStore, enricher: Enricher, guard: Guard) -> None:
        self.core = core
        self.store = store
        self.enricher = enricher
        self.guard = guard
        self.ahead = VectorMemo()  # vectors embedded for the detector, taken by the write that follows

    def screen(self, user_id: str, items: Sequence[MemoryItem]) -> Screened:
        """Scan new memories for injection and redact their PII (in place); record flags and sealed originals
        before the memories are written.
        """
        # the detector's embedding head reads the vectors the write stores: embedded here, taken by ``embed``
        embedder = self.core.embedder
        texts = [index_text(it) for it in items] if self.guard.wants_vectors(embedder.identity, embedder.dim) else []
        if texts:
            self.core.check_embedder()
        vectors = self.embed(texts) if texts else None
        screened = self.guard.screen(items, vectors)
        if vectors is not None:  # (a text the redactor changed is embedded again, redacted, by the write)
            kept = [i for i, it in enumerate(items) if index_text(it) == texts[i]]
            self.ahead.put([embed_hash(texts[i]) for i in kept], vectors[kept])
        self.guard.record(self.store, user_id, screened)
        return screened

    def insert(
        self,
        items: Sequence[MemoryItem],
        event: HistoryEvent = HistoryEvent.ADD,
        *,
        enrich: bool = True,
        jobs: Sequence[Job] = (),
        claim: JobClaim | None = None,
        annotate: Annotate | None = None,
    ) -> None:
        """Embed, enrich and store ``items`` (with ``jobs`` in the same transaction), BLAS held to the config."""
        if not items:
            return
        with blas_threads(self.core.config.blas_threads):  # embedding, labels and vector comparisons
            self._insert(items, event, enrich=enrich, jobs=jobs, claim=claim, annotate=annotate)

    def _insert(
        self,
        items: Sequence[MemoryItem],
        event: HistoryEvent,
        *,
        enrich: bool,
        jobs: Sequence[Job],
        claim: JobClaim | None,
        annotate: Annotate | None,
    ) -> None:
        self.core.check_embedder()
        texts = [index_text(it) for it in items]
        vectors = self.embed(texts)
        tables: dict[str, list[AliasRow]] = {}  # the alias tables enrichment reads, for the relations
        taught: dict[str, list[str]] = {}  # the aliases each new item taught: it is their source
        aliases = self.enrich(items, vectors, tables, taught) if enrich else None
        if annotate is not None:  # facts the caller knows beyond enrichment (an observation's tagged entities)
            for user, rows in annotate(items).items():
                aliases = aliases if aliases is not None else {}
                aliases.setdefault(user, []).extend(rows)
        relations = relations_by_user(items, aliases, self.store, tables) if aliases is not None else None
        self.claim_identity()
        self.store.insert(
            items,
            texts,
            vectors,
            event=event,
            aliases=aliases,
            jobs=jobs,
            claim=claim,
            relations=relations,
            taught=taught,
        )

    def claim_identity(self) -> None:
        """Record this embedder as the store's model when the store has none yet (its first vectors)."""
        if self.store.embedder_identity() is None:
            self.store.set_embedder_identity(self.core.embedder.identity, self.core.embedder.dim)

    def enrich(
        self,
        items: Sequence[MemoryItem],
        vectors: Vectors,
        tables: dict[str, list[AliasRow]] | None = None,
        taught: dict[str, list[str]] | None = None,
    ) -> dict[str, list[AliasRow]]:
        """Fill the write-time dimensions of new items; returns each user's changed entity-table rows (and puts
        each user's table as read into ``tables``, and the aliases each item taught, by id, into ``taught``).
        """
        by_user: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            by_user.setdefault(item.user_id, []).append(i)
        changed: dict[str, list[AliasRow]] = {}
        for user_id, idx in by_user.items():
            stored = self.store.entity_aliases(user_id)
            if tables is not None:
                tables[user_id] = stored
            before = set(stored)
            resolver = EntityResolver.from_rows(before)
            learnt = self.enricher.enrich([items[i] for i in idx], vectors[idx], resolver)
            if taught is not None:
                taught.update(resolver.held(learnt))
            changed[user_id] = resolver.changes(before)
        return changed

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed with the store's vectors as a cache keyed by the SHA-256 of the exact text."""
        hashes = [embed_hash(t) for t in texts]
        known = self.store.cached_vectors(hashes)
        known.update(self.ahead.take([h for h in hashes if h not in known]))  # embedded ahead for the detector
        # the distinct texts not embedded yet, each with its key (hashed once)
        pending = list(dict.fromkeys((t, h) for t, h in zip(texts, hashes, strict=True) if h not in known))
        fresh: dict[str, Vectors] = {}
        batch = self.core.config.embed_batch
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            for (_, key), vec in zip(chunk, self.core.embedder.embed([t for t, _ in chunk]), strict=True):
                fresh[key] = vec
        known.update(fresh)
        return np.vstack([known[h] for h in hashes]).astype(np.float32, copy=False)
