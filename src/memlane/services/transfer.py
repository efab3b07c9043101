"""Moving memories in and out: export to JSONL, import from it (relearning the tables derived from memories),
store statistics, and re-embedding every memory with another model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

import numpy as np

from memlane.documents.service import Documents
from memlane.enrich.aliases import EntityResolver
from memlane.enrich.pipeline import Enricher
from memlane.errors import ImportFormatError, StoreError, ValidationError
from memlane.graph.relations import relations_by_user, relations_from_claims
from memlane.lifecycle.distill import typed_hash
from memlane.models import HistoryEvent, MemoryItem, MemoryKind, Stats, UserSummary
from memlane.records.entities import AliasRow
from memlane.records.graph import RelationClaim
from memlane.records.keys import index_text, message_hash
from memlane.scope import DEFAULT_TENANT, check_tenant, in_tenant, scope_key, split_key, unscope
from memlane.security.import_ids import place as place_imported
from memlane.security.transfer import EXPORT_FORMAT, ImportLine, read_export, write_export
from memlane.security.validation import check_bool, check_callback, check_int, optional_id
from memlane.services.core import Core
from memlane.services.indexing import Indexer
from memlane.store.base import EntityIndex, RecordReader, RecordWriter, StoreInfo, StoreTransfer, VectorStore

Relearnt = tuple[dict[str, list[AliasRow]], dict[str, list[RelationClaim]], dict[str, list[str]]]


class TransferStore(RecordReader, RecordWriter, VectorStore, EntityIndex, StoreInfo, Protocol):
    """What export, import, statistics and reindexing use: rows, vectors and their model, the entity table."""


class Transfer:
    """Export, import, statistics and reindexing of one store."""

    def __init__(
        self, core: Core, store: TransferStore, indexer: Indexer, enricher: Enricher, documents: Documents
    ) -> None:
        self.documents = documents
        self.core = core
        self.store = store
        self.indexer = indexer
        self.enricher = enricher

    def export(self, dest: str | Path | IO[str], *, user_id: str | None, tenant: str | None) -> int:
        """Write memories (one user's, or all of the tenant's) as JSONL (see ``Memory.export``). Every line is checked
        with the rules ``import_`` applies, so an export never holds what its import would reject; user ids are
        written without their tenant.
        """
        self.core.write_access()  # the searches' counts first, so that what this reads or writes includes them
        user_id = optional_id(user_id, max_chars=self.core.limits.id_chars, what="user_id")
        tenant = check_tenant(tenant)
        ident = self.store.embedder_identity()
        header: dict[str, object] = {"memlane_export": EXPORT_FORMAT, "embedder": ident[0] if ident else None}
        if user_id is not None:
            items = self.store.iter_items(scope_key(tenant, user_id))
        else:
            items = (it for it in self.store.iter_items(None) if in_tenant(it.user_id, tenant))
        return write_export(dest, header, (unscope(it) for it in items), self.core.limits)

    def import_(
        self,
        source: str | Path | IO[str],
        *,
        user_id: str | None,
        keep_user_ids: bool,
        on_progress: Callable[[int], None] | None,
        tenant: str | None,
    ) -> int:
        """Load a JSONL export, all or nothing; returns how many memories were added (see ``Memory.import_``).

        A caller bound to a tenant (``tenant`` given, as the REST server always does) gets ids derived from the
        user and the file's id (``memlane.security.import_ids``), so the answer is the same whether the id exists
        elsewhere or not.
        """
        self.core.write_access()  # the searches' counts first, so that what this reads or writes includes them
        check_bool(keep_user_ids, what="keep_user_ids")
        derive = tenant is not None  # a tenant-bound caller: ids derived, no answer says an id exists elsewhere
        tenant = check_tenant(tenant)
        if keep_user_ids:
            if user_id is not None:
                raise ValidationError("give user_id, or keep_user_ids=True to keep the file's user ids, not both")
            target = None
        else:
            target = self.core.bind(user_id, tenant).key
        on_progress = check_callback(on_progress, what="on_progress")
        lines = read_export(source, self.core.limits)
        for line in lines:
            _retarget(line.item, target or scope_key(tenant, line.item.user_id))
        fresh = place_imported(lines, self._held) if derive else self._new_only(lines)
        items = [line.item for line in fresh]
        for owner in dict.fromkeys(it.user_id for it in items):
            self.indexer.screen(owner, [it for it in items if it.user_id == owner])
        if items:
            self.core.check_embedder()
            texts = [index_text(it) for it in items]
            parts = []
            for start in range(0, len(texts), 1000):
                parts.append(self.indexer.embed(texts[start : start + 1000]))
                if on_progress is not None:
                    on_progress(len(texts[start : start + 1000]))
            self.indexer.claim_identity()
            aliases, relations, taught = self._relearn(items)
            try:
                self.store.insert(
                    items,
                    texts,
                    np.vstack(parts),
                    event=HistoryEvent.IMPORT,
                    aliases=aliases,
                    relations=relations,
                    taught=taught,
                )
            except StoreError:
                self._raise_taken(fresh)
                raise
        self.documents.repassage(items)  # an export holds memories, not their passages
        return len(items)

    def _relearn(self, items: Sequence[MemoryItem]) -> Relearnt:
        """Each user's entity-table rows and graph relations for imported memories, and the aliases each memory
        taught, read from them in the order they were written, as their writes read them (an export holds
        memories, not the tables derived from them).
        """
        ordered = sorted(items, key=lambda it: (it.created_at, it.id))
        tables: dict[str, list[AliasRow]] = {}
        aliases: dict[str, list[AliasRow]] = {}
        taught: dict[str, list[str]] = {}
        resolvers: dict[str, EntityResolver] = {}
        for user_id in dict.fromkeys(it.user_id for it in ordered):
            stored = tables[user_id] = self.store.entity_aliases(user_id)
            before = set(stored)
            resolver = resolvers[user_id] = EntityResolver.from_rows(before)
            taught.update(resolver.held(self.enricher.learn([it for it in ordered if it.user_id == user_id], resolver)))
            aliases[user_id] = resolver.changes(before)
        messages = [it for it in ordered if it.kind is MemoryKind.MESSAGE]
        relations = relations_by_user(messages, aliases, self.store, tables)
        typed = [it for it in ordered if it.kind is not MemoryKind.MESSAGE]
        for user_id, claims in relations_from_claims(typed, resolvers).items():
            relations.setdefault(user_id, []).extend(claims)
        # in the order their memories were written, so that a typed memory joins the edge its turn opened before a
        # later turn closed it, as it did when both were written
        rank = {it.id: i for i, it in enumerate(ordered)}
        for claims in relations.values():
            claims.sort(key=lambda claim: rank.get(claim.source_id, -1))
        return aliases, relations, taught

    def _new_only(self, lines: Sequence[ImportLine]) -> list[ImportLine]:
        by_user: dict[str, list[ImportLine]] = {}
        for line in lines:
            by_user.setdefault(line.item.user_id, []).append(line)
        fresh: list[ImportLine] = []
        for user_id, group in by_user.items():
            have = self.store.get_many(user_id, [line.item.id for line in group])
            fresh.extend(line for line in group if line.item.id not in have)
        return sorted(fresh, key=lambda line: line.lineno)

    def _held(self, user_id: str, ids: Sequence[str]) -> list[str]:
        return list(self.store.get_many(user_id, ids))

    def _raise_taken(self, lines: Sequence[ImportLine]) -> None:
        """After a failed import write: an error naming the first line whose id another user's memory holds."""
        wanted = {line.item.id: line for line in lines}
        for stored in self.store.iter_items(None):
            line = wanted.get(stored.id)
            if line is not None and stored.user_id != line.item.user_id:
                raise ImportFormatError(
                    f"line {line.lineno}: id {stored.id[:80]!r} belongs to another user's memory; nothing was imported"
                )

    def users(self, *, tenant: str | None, limit: int, offset: int) -> list[UserSummary]:
        """The users of a tenant with their memory counts (see ``Memory.users``): what the inspector's user list
        shows. A backend that cannot list its users returns none.
        """
        tenant = check_tenant(tenant)
        limit, offset = self.core.page(limit, offset)
        store = self.core.store
        if not isinstance(store, StoreTransfer):
            return []
        keys = [k for k in store.user_ids() if in_tenant(k, tenant)][offset : offset + limit]
        return [UserSummary(user_id=split_key(k)[1], memories=store.count(k)) for k in keys]

    def stats(self, *, user_id: str | None, tenant: str | None) -> Stats:
        """Counts and size of the store, or of one user's memories (see ``Memory.stats``)."""
        self.core.write_access()  # the searches' counts first, so that what this reads or writes includes them
        user_id = optional_id(user_id, max_chars=self.core.limits.id_chars, what="user_id")
        if user_id is not None:
            user_id = scope_key(check_tenant(tenant), user_id)
        elif tenant is not None and check_tenant(tenant) != DEFAULT_TENANT:
            raise ValidationError("stats within a tenant need a user_id (without one they cover the whole store)")
        ident = self.store.embedder_identity()
        return Stats(
            memories=self.store.count(user_id),
            users=self.store.user_count() if user_id is None else int(self.store.count(user_id) > 0),
            by_kind=self.store.count_by_kind(user_id),
            embedder=ident[0] if ident else None,
            dim=ident[1] if ident else None,
            path=self.store.location,
            size_bytes=self.store.size_bytes(),
        )

    def reindex(self, *, batch_size: int, on_progress: Callable[[int], None] | None) -> int:
        """Re-embed every memory with the configured embedder and record it as the store's model.

        New vectors are written beside the live ones, which searches keep using; the switch to the new vectors
        and model happens in the same transaction as the last batch. A reindex that is interrupted leaves the
        old, consistent state, and run again with the same embedder it resumes where it stopped. Returns how
        many memories this call embedded.
        """
        self.core.write_access()  # the searches' counts first, so that what this reads or writes includes them
        batch_size = check_int(batch_size, what="batch_size", low=1, high=self.core.limits.batch)
        on_progress = check_callback(on_progress, what="on_progress")
        embedder = self.core.embedder
        identity, dim = embedder.identity, embedder.dim
        self.store.reindex_begin(identity, dim)
        n, after = 0, None
        while True:
            batch = self.store.reindex_pending(after, batch_size)
            if not batch:
                if self.store.reindex_stage({}, identity, dim, final=True):
                    self.documents.repassage_missing()  # passages of the old model went at the switch
                    return n
                after = None  # memories written meanwhile by another process: embed them too
                continue
            vectors = embedder.embed([index_text(item) for item in batch])
            after = batch[-1].id
            last = len(batch) < batch_size
            staged = {item.id: vec for item, vec in zip(batch, vectors, strict=True)}
            switched = self.store.reindex_stage(staged, identity, dim, final=last)
            n += len(batch)
            if on_progress is not None:
                on_progress(len(batch))
            if switched:
                self.documents.repassage_missing()  # passages of the old model went at the switch
                return n
            if last:
                after = None


def _retarget(item: MemoryItem, user_id: str) -> None:
    """Move an imported memory into ``user_id``, recomputing its idempotency key there.

    A message's key depends on details the file does not hold (whether its timestamp was given, its occurrence
    in its ``add`` call): the form that reproduces the file's key under the file's user is kept.
    """
    old_user = item.user_id
    if old_user == user_id:
        return
    item.user_id = user_id
    if item.kind is not MemoryKind.MESSAGE:
        item.content_hash = typed_hash(user_id, item.agent_id, item.kind, item.text)
        return
    scope = (item.agent_id, item.session_id, item.text)
    forms: list[tuple[datetime | None, int]] = [(None, 0), *((item.timestamp, n) for n in range(256))]
    kept = next((f for f in forms if message_hash(old_user, *scope, *f) == item.content_hash), forms[1])
    item.content_hash = message_hash(user_id, *scope, *kept)
