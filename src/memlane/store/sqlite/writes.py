"""Writing memory rows with their index entries, entity rows, history and jobs, each call in one transaction."""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import numpy as np

from memlane.embedding.base import Vectors
from memlane.errors import NotFoundError
from memlane.models import TYPED_KINDS, HistoryEntry, HistoryEvent, MemoryItem, utcnow
from memlane.records.entities import AliasRow
from memlane.records.graph import RelationClaim
from memlane.store.alias_tables import AliasTables
from memlane.store.records import AccessUse, embed_hash
from memlane.store.sql.writes import SQLWrites, WriteSet
from memlane.store.sqlite.ann_feed import AnnIndexes
from memlane.store.sqlite.db import Database, marks
from memlane.store.sqlite.entities import replace_taught, write_aliases, write_entities, write_taught
from memlane.store.sqlite.graph import write_relations
from memlane.store.sqlite.history import erase_text, log_event
from memlane.store.sqlite.hot_feed import HotScopes
from memlane.store.sqlite.inserts import insert_row, insert_rows, number_turns
from memlane.store.sqlite.passages import write_new_passages
from memlane.store.sqlite.queue import JOBS
from memlane.store.sqlite.rows import MUTABLE, item_params, to_micros
from memlane.store.sqlite.text import drop_entry, index_entry, purge_deleted_terms, refresh_next_context, turn_of
from memlane.store.sqlite.validity import forget_links, mark_contradicted

_SETS: Final = ", ".join(f"{col} = ?" for col in MUTABLE)


def row_key(c: sqlite3.Connection, user_id: str, memory_id: str) -> int:
    """The row key of one memory of this user; ``NotFoundError`` when absent."""
    row = c.execute("SELECT pk FROM memories WHERE +user_id = ? AND id = ?", (user_id, memory_id)).fetchone()
    if row is None:
        raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
    return int(row[0])


def update_fields(c: sqlite3.Connection, pk: int, item: MemoryItem) -> None:
    """Overwrite a row's fields and entity rows (not its own index entry; the next turn's context follows)."""
    before = turn_of(c, pk)
    c.execute(f"UPDATE memories SET {_SETS} WHERE pk = ?", (*item_params(item, "")[2:-1], pk))
    write_entities(c, pk, item)
    refresh_next_context(c, before)
    after = turn_of(c, pk)
    if after != before:
        refresh_next_context(c, after)


def remove_row(
    c: sqlite3.Connection, user_id: str, pk: int, memory_id: str, at: datetime, changes: dict[str, Any]
) -> None:
    """Delete a memory from every index (the next turn's context included), forget its words in history, log DELETE."""
    turn = turn_of(c, pk)
    drop_entry(c, pk)
    c.execute("DELETE FROM memories WHERE pk = ?", (pk,))  # vectors and entity rows cascade
    refresh_next_context(c, turn)
    c.execute("DELETE FROM feedback WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
    erase_text(c, user_id, memory_id)
    forget_links(c, user_id, memory_id)
    log_event(c, user_id, memory_id, HistoryEvent.DELETE, at, changes=changes)


def drop_derived(
    c: sqlite3.Connection, user_id: str, memory_id: str, at: datetime, why: str
) -> builtins.list[tuple[int, str]]:
    """Erase what was derived from a memory's text: typed memories drawn from it alone are removed (with their
    entity rows, relations and aliases), the others lose it as a source. ``why`` names the cause in their history
    (``source_deleted``, or ``source_rewritten`` when an update replaced the text). Returns the removed rows.
    """
    removed: builtins.list[tuple[int, str]] = []
    # The typed memories by the (user_id, kind) index (a scope's messages are never read): kind IN (...),
    # since kind != 'message' made SQLite walk every row of the user (a delete at 100k: 55 -> 9 ms).
    for dpk, mid, sources in c.execute(
        f"SELECT pk, id, sources FROM memories m WHERE m.user_id = ? AND m.kind IN ({marks(len(TYPED_KINDS))}) "
        "AND EXISTS (SELECT 1 FROM json_each(m.sources) s WHERE json_extract(s.value, '$.memory_id') = ?)",
        (user_id, *TYPED_KINDS, memory_id),
    ).fetchall():
        kept = [ref for ref in json.loads(sources) if ref.get("memory_id") != memory_id]
        if kept:
            c.execute("UPDATE memories SET sources = ? WHERE pk = ?", (json.dumps(kept), int(dpk)))
            log_event(c, user_id, mid, HistoryEvent.UPDATE, at, changes={why: memory_id})
        else:
            removed.append((int(dpk), str(mid)))
            remove_row(c, user_id, int(dpk), str(mid), at, {why: memory_id})
    return removed


class SQLiteWrites(SQLWrites):
    """Inserts, updates, deletes and access counts; the vector cache follows each committed write."""

    _db: Database
    _cache: AnnIndexes
    _hot: HotScopes
    _aliases: AliasTables
    _fts_secure_delete: bool

    def _write(self, w: WriteSet) -> None:
        items, index_texts, vectors, event, changes = w.items, w.index_texts, w.vectors, w.event, w.changes
        aliases, jobs, updates, finish, claim = w.aliases, w.jobs, w.updates, w.finish, w.claim
        relations, taught, passages = w.relations, w.taught, w.passages
        by_user: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            by_user.setdefault(item.user_id, []).append(i)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        pks: list[int] = []
        versions: dict[str, tuple[int, int]] = {}
        with self._db.atomic() as c:
            if finish is not None:  # first: a fenced job writes nothing
                JOBS.finish(c, finish, to_micros(utcnow()))
            first_new = number_turns(c, items)
            if any(item.superseded_by for item in items):  # an older claim learnt late: row by row
                for item, body, vec in zip(items, index_texts, vecs, strict=True):
                    pks.append(insert_row(c, item, body, vec, text_entry=False))
                    extra = dict(changes.get(item.id, {}))
                    log_event(c, item.user_id, item.id, event, item.created_at, None, item.text, extra)
                    if item.superseded_by:  # born superseded, so are its messages
                        mark_contradicted(c, item)
                for pk, item, body in zip(pks, items, index_texts, strict=True):  # together: one FTS5 flush
                    index_entry(c, pk, item, body)
            else:
                pks = insert_rows(c, items, index_texts, vecs, event, changes, first_new)
            write_new_passages(c, pks, items, passages)
            for item, entry in updates:
                update_fields(c, row_key(c, item.user_id, item.id), item)
                log_event(
                    c, item.user_id, item.id, entry.event, entry.at, entry.old_text, entry.new_text, entry.changes
                )
                if entry.event is HistoryEvent.SUPERSEDE:
                    mark_contradicted(c, item)
            for user_id, rows in aliases.items():
                write_aliases(c, user_id, rows)
            if taught:
                write_taught(
                    c, [(pk, it.user_id, a) for pk, it in zip(pks, items, strict=True) for a in taught.get(it.id, ())]
                )
            for user_id, claims in relations.items():
                write_relations(c, user_id, claims)
            for job in jobs:
                JOBS.enqueue(c, job, claim)
            for user_id in by_user:
                versions[user_id] = self._db.bump(c, user_id)
        for user_id, idx in by_user.items():
            old, new = versions[user_id]
            self._cache.advance(user_id, old, new, add=([pks[i] for i in idx], [items[i].id for i in idx], vecs[idx]))

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
        versions = None
        dropped: builtins.list[tuple[int, str]] = []
        with self._db.atomic() as c:
            pk = row_key(c, item.user_id, item.id)
            if entry.old_text is not None and entry.old_text != entry.new_text:  # a rewrite erases as a delete does
                dropped = drop_derived(c, item.user_id, item.id, entry.at, "source_rewritten")
            update_fields(c, pk, item)
            write_aliases(c, item.user_id, aliases)
            if taught is not None:  # the text was read again: what it teaches now is what it is the source of
                replace_taught(c, pk, item.user_id, taught)
            if relations is not None:
                c.execute("DELETE FROM relation_sources WHERE pk = ?", (pk,))  # a relation left unsourced goes
                write_relations(c, item.user_id, relations)
            if index_text is not None and vector is not None:
                vec = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
                c.execute("UPDATE memories SET embed_hash = ? WHERE pk = ?", (embed_hash(index_text), pk))
                c.execute("UPDATE vectors SET vec = ? WHERE pk = ?", (vec.tobytes(), pk))
                kept = c.execute("SELECT ctx FROM memories_fts WHERE rowid = ?", (pk,)).fetchone()
                drop_entry(c, pk)
                index_entry(c, pk, item, index_text, kept[0] if kept else "")
                versions = self._db.bump(c, item.user_id)
            elif dropped:
                versions = self._db.bump(c, item.user_id)
            log_event(c, item.user_id, item.id, entry.event, entry.at, entry.old_text, entry.new_text, entry.changes)
            if dropped and not self._fts_secure_delete:  # an older SQLite: no term of a dropped copy survives
                purge_deleted_terms(c)
        if versions is not None:
            fresh = vector is not None
            self._cache.advance(
                item.user_id,
                *versions,
                remove=[pk] * fresh + [k for k, _ in dropped],
                add=([pk], [item.id], np.asarray(vector, np.float32).reshape(1, -1)) if fresh else None,
            )
            self._cache.erased(item.user_id)  # the old text's vector must not outlive it on disk
            self._aliases.forget(item.user_id)  # nor a name only the old text had
        if dropped:
            self._db.truncate_wal()  # the WAL still holds the dropped copies' pages

    def delete(self, user_id: str, memory_id: str, at: datetime) -> builtins.list[str]:
        with self._db.atomic() as c:
            pk = row_key(c, user_id, memory_id)
            removed = [(pk, memory_id)]
            remove_row(c, user_id, pk, memory_id, at, {})
            removed += drop_derived(c, user_id, memory_id, at, "source_deleted")
            versions = self._db.bump(c, user_id)
            if not self._fts_secure_delete:  # an older SQLite: merge the index so no term of the text survives
                purge_deleted_terms(c)
        self._cache.advance(user_id, *versions, remove=[k for k, _ in removed])
        self._cache.erased(user_id)
        self._aliases.forget(user_id)  # an orphaned entity's name leaves this process too
        self._db.truncate_wal()  # the WAL still holds the pages as they were before the delete
        return [mid for _, mid in removed]

    def delete_user(self, user_id: str) -> int:
        with self._db.atomic() as c:
            n = c.execute("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,)).fetchone()[0]
            c.execute(
                "DELETE FROM memories_fts WHERE rowid IN (SELECT pk FROM memories WHERE user_id = ?)",
                (user_id,),
            )
            # vector_log last: deleting the vectors (a cascade) logs them again
            for table in (
                "memories",
                "entities",
                "entity_versions",
                "feedback",
                "history",
                "jobs",
                "archive",
                "contradictions",
                "relations",
                "memory_flags",
                "pii_originals",
                "passage_versions",
                "vector_log",
            ):
                c.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
            c.execute("DELETE FROM vector_log_floor WHERE user_id = ?", (user_id,))
            # The user's log goes with them (no trace of whom is kept); the store's erasure counter tells other
            # processes' read models to check that they hold no rows of a user erased this way.
            c.execute("DELETE FROM fact_log WHERE user_id = ?", (user_id,))
            c.execute("DELETE FROM fact_log_floor WHERE user_id = ?", (user_id,))
            c.execute(
                "INSERT INTO meta VALUES ('erasures', '1') "
                "ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
            )
            self._db.bump(c, user_id)
            if not self._fts_secure_delete:  # an older SQLite: merge the index so no term of the user survives
                purge_deleted_terms(c)
        self._cache.forget(user_id)
        self._hot.forget(user_id)
        self._aliases.forget(user_id)
        self._db.truncate_wal()  # the WAL still holds the pages as they were before the delete
        return int(n)

    def record_access(self, user_id: str, uses: Mapping[str, AccessUse]) -> None:
        if not uses:
            return
        # Only the access columns change, which no trigger logs and no cache holds.
        with self._db.unseen() as c:
            c.executemany(
                "UPDATE memories SET access_count = access_count + ?, last_accessed = ? WHERE +user_id = ? AND id = ?",
                [(use.times, to_micros(use.last), user_id, mid) for mid, use in uses.items()],
            )
