"""``SQLiteStore``: memory rows, FTS5 text index, vectors and history in one SQLite file."""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memlane.embedding.base import Vectors
from memlane.enrich.entities import canonical
from memlane.errors import CorruptStoreError, NotFoundError, SchemaError, StoreError
from memlane.models import (
    ArchivedMemory,
    Filters,
    HistoryEntry,
    HistoryEvent,
    Job,
    JobState,
    MemoryItem,
    MemoryKind,
    utcnow,
)
from memlane.store.base import AliasTuple
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.sqlite import jobs as jobs_sql
from memlane.store.sqlite import reindex as reindex_sql
from memlane.store.sqlite.rows import (
    COLUMNS,
    MUTABLE,
    SELECT_ITEM,
    filter_sql,
    from_micros,
    is_empty,
    item_params,
    only_current,
    row_to_item,
    to_micros,
)
from memlane.store.sqlite.schema import APPLICATION_ID, MIGRATIONS
from memlane.store.sqlite.vectors import MatrixCache, UserMatrix, top_k

log = logging.getLogger(__name__)

# BM25 weight of the previous turn's words relative to the memory's own (the FTS column ``ctx``).
CONTEXT_WEIGHT = 0.4


_INSERT = f"INSERT INTO memories ({COLUMNS}, embed_hash) VALUES ({', '.join('?' * (len(MUTABLE) + 3))})"


_QUALIFIED = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))


def scope_token(user_id: str) -> str:
    """The FTS token that confines a text search to one user's memories."""
    return "u" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:24]


def fts_match(user_id: str, terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of ``terms`` in the body or its context, within the user's scope."""
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f"scope : {scope_token(user_id)} AND {{body ctx}} : ({quoted})"


def embed_hash(index_text: str) -> str:
    """Key of the embedding cache: SHA-256 of the exact text that was embedded."""
    return hashlib.sha256(index_text.encode("utf-8")).hexdigest()


class SQLiteStore:
    """The default store. Thread-safe: one connection guarded by a lock; WAL lets other processes read."""

    def __init__(self, path: Path | str) -> None:
        self._path = str(path)
        self._lock = threading.RLock()
        self._vectors = MatrixCache()
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self._path}: {exc}") from exc
        try:
            self._configure()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise CorruptStoreError(f"{self._path} is not a readable memlane database: {exc}") from exc
        except Exception:
            self._conn.close()
            raise

    # -- setup -------------------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return self._path

    def _configure(self) -> None:
        c = self._conn
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA busy_timeout = 10000")
        if self._path != ":memory:":
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")

    def _migrate(self) -> None:
        c = self._conn
        app_id = c.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app_id != APPLICATION_ID and tables:
            raise CorruptStoreError(f"{self._path} is an SQLite database of another application, not memlane")
        with self.atomic():
            c.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            applied = {r[0] for r in c.execute("SELECT name FROM migrations")}
            known = {name for name, _ in MIGRATIONS}
            unknown = applied - known
            if unknown:
                raise SchemaError(f"{self._path} has migrations this memlane does not know: {sorted(unknown)}")
            for name, sql in MIGRATIONS:
                if name in applied:
                    continue
                log.info("applying migration %s to %s", name, self._path)
                for statement in _split_sql(sql):
                    c.execute(statement)
                c.execute("INSERT INTO migrations VALUES (?, datetime('now'))", (name,))
            c.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    @contextlib.contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """A transaction (a savepoint when nested): all of it commits, or none of it."""
        with self._lock:
            c = self._conn
            nested = c.in_transaction
            name = f"sp{threading.get_ident()}"
            c.execute(f"SAVEPOINT {name}" if nested else "BEGIN IMMEDIATE")
            try:
                yield c
            except BaseException:
                c.execute(f"ROLLBACK TO {name}" if nested else "ROLLBACK")
                if nested:
                    c.execute(f"RELEASE {name}")
                raise
            else:
                c.execute(f"RELEASE {name}" if nested else "COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise _translate(exc, self._path) from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._vectors.drop()

    # -- scope versions ----------------------------------------------------------------------------
    def _version(self, user_id: str) -> int:
        rows = self._read("SELECT version FROM scope_versions WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    def _bump(self, c: sqlite3.Connection, user_id: str) -> tuple[int, int]:
        row = c.execute("SELECT version FROM scope_versions WHERE user_id = ?", (user_id,)).fetchone()
        old = int(row[0]) if row else 0
        c.execute(
            "INSERT INTO scope_versions VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET version = excluded.version",
            (user_id, old + 1),
        )
        return old, old + 1

    # -- records -----------------------------------------------------------------------------------
    def insert(
        self,
        items: Sequence[MemoryItem],
        index_texts: Sequence[str],
        vectors: Vectors,
        event: HistoryEvent = HistoryEvent.ADD,
        aliases: Mapping[str, Sequence[AliasTuple]] | None = None,
        *,
        jobs: Sequence[Job] = (),
        changes: Mapping[str, Mapping[str, Any]] | None = None,
        claim: JobClaim | None = None,
    ) -> None:
        self.write(items, index_texts, vectors, event=event, aliases=aliases, jobs=jobs, changes=changes, claim=claim)

    def write(
        self,
        items: Sequence[MemoryItem],
        index_texts: Sequence[str],
        vectors: Vectors,
        *,
        event: HistoryEvent = HistoryEvent.ADD,
        aliases: Mapping[str, Sequence[AliasTuple]] | None = None,
        jobs: Sequence[Job] = (),
        changes: Mapping[str, Mapping[str, Any]] | None = None,
        updates: Sequence[tuple[MemoryItem, HistoryEntry]] = (),
        finish: JobOutcome | None = None,
        claim: JobClaim | None = None,
    ) -> None:
        """New items (with their index entries), changed items (no re-index), jobs enqueued (a running one under
        ``claim``) and a job finished: all in one transaction, or nothing when the finished job is fenced.
        """
        if not (len(items) == len(index_texts) == len(vectors)):
            raise StoreError("insert needs one index text and one vector per item")
        if not items and not updates and not jobs and finish is None:
            return
        by_user: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            by_user.setdefault(item.user_id, []).append(i)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        pks: list[int] = []
        versions: dict[str, tuple[int, int]] = {}
        try:
            with self.atomic() as c:
                if finish is not None:  # first: a fenced job writes nothing
                    jobs_sql.finish(c, finish, to_micros(utcnow()))
                next_position: dict[tuple[str, str | None], int] = {}
                for item, body, vec in zip(items, index_texts, vecs, strict=True):
                    if item.position is None and item.kind == MemoryKind.MESSAGE:
                        item.position = self._next_position(c, next_position, item.user_id, item.session_id)
                    pks.append(self._insert_row(c, item, body, vec))
                    extra = dict((changes or {}).get(item.id, {}))
                    self._log(c, item.user_id, item.id, event, item.created_at, None, item.text, extra)
                for item, entry in updates:
                    self._update_row(c, item, entry)
                for user_id, rows in (aliases or {}).items():
                    self._write_aliases(c, user_id, rows)
                for job in jobs:
                    jobs_sql.enqueue(c, job, claim)
                for user_id in by_user:
                    versions[user_id] = self._bump(c, user_id)
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"insert rejected by the database: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        for user_id, idx in by_user.items():
            old, new = versions[user_id]
            self._vectors.advance(user_id, old, new, add=([pks[i] for i in idx], [items[i].id for i in idx], vecs[idx]))

    def _insert_row(self, c: sqlite3.Connection, item: MemoryItem, body: str, vec: Vectors) -> int:
        cur = c.execute(_INSERT, item_params(item, embed_hash(body)))
        pk = int(cur.lastrowid or 0)
        self._write_entities(c, pk, item)
        c.execute("INSERT INTO vectors (pk, user_id, vec) VALUES (?, ?, ?)", (pk, item.user_id, vec.tobytes()))
        c.execute(
            "INSERT INTO memories_fts (rowid, body, ctx, scope) VALUES (?, ?, ?, ?)",
            (pk, body, _previous_turn(c, item), scope_token(item.user_id)),
        )
        return pk

    def _update_row(self, c: sqlite3.Connection, item: MemoryItem, entry: HistoryEntry) -> None:
        """Overwrite a row's fields (not its index entries) and log the change."""
        params = item_params(item, "")
        sets = ", ".join(f"{col} = ?" for col in MUTABLE)
        row = c.execute("SELECT pk FROM memories WHERE +user_id = ? AND id = ?", (item.user_id, item.id)).fetchone()
        if row is None:
            raise NotFoundError(f"no memory {item.id!r} for user {item.user_id!r}")
        c.execute(f"UPDATE memories SET {sets} WHERE pk = ?", (*params[2:-1], int(row[0])))
        self._write_entities(c, int(row[0]), item)
        self._log(c, item.user_id, item.id, entry.event, entry.at, entry.old_text, entry.new_text, entry.changes)

    @staticmethod
    def _next_position(
        c: sqlite3.Connection, cache: dict[tuple[str, str | None], int], user_id: str, session_id: str | None
    ) -> int:
        key = (user_id, session_id)
        if key not in cache:
            row = c.execute(
                "SELECT max(position) FROM memories WHERE user_id = ? AND session_id IS ?", (user_id, session_id)
            ).fetchone()
            cache[key] = -1 if row[0] is None else int(row[0])
        cache[key] += 1
        return cache[key]

    @staticmethod
    def _write_entities(c: sqlite3.Connection, pk: int, item: MemoryItem) -> None:
        c.execute("DELETE FROM memory_entities WHERE pk = ?", (pk,))
        speaker = canonical(item.speaker) if item.speaker else None
        c.executemany(
            "INSERT OR IGNORE INTO memory_entities (pk, user_id, entity, said_by) VALUES (?, ?, ?, ?)",
            [(pk, item.user_id, e, int(e == speaker)) for e in dict.fromkeys(item.entities)],
        )

    @staticmethod
    def _write_aliases(c: sqlite3.Connection, user_id: str, rows: Sequence[AliasTuple]) -> None:
        c.executemany(
            "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(user_id, alias) DO UPDATE SET canonical = excluded.canonical, kind = excluded.kind, "
            "display = excluded.display",
            [(user_id, *row) for row in rows],
        )

    def entity_aliases(self, user_id: str) -> builtins.list[AliasTuple]:
        """The user's entity table: (alias, canonical, kind, display) rows."""
        rows = self._read("SELECT alias, canonical, kind, display FROM entities WHERE user_id = ?", (user_id,))
        return [(str(a), str(t), str(k), str(d)) for a, t, k, d in rows]

    def resolve_aliases(self, user_id: str, keys: Sequence[str]) -> dict[str, str]:
        """The canonical entity each of ``keys`` is an alias of (keys that are no alias are left out)."""
        wanted = list(dict.fromkeys(keys))[:500]
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        rows = self._read(
            f"SELECT alias, canonical FROM entities WHERE user_id = ? AND alias IN ({marks})", (user_id, *wanted)
        )
        return {str(a): str(t) for a, t in rows}

    def get(self, user_id: str, memory_id: str) -> MemoryItem:
        rows = self._read(f"{SELECT_ITEM} WHERE +m.user_id = ? AND m.id = ?", (user_id, memory_id))
        if not rows:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_item(rows[0])

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]:
        out: dict[str, MemoryItem] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in self._read(f"{SELECT_ITEM} WHERE +m.user_id = ? AND m.id IN ({marks})", (user_id, *chunk)):
                item = row_to_item(row)
                out[item.id] = item
        return out

    def list(self, user_id: str, filters: Filters, limit: int, offset: int) -> list[MemoryItem]:
        where, params = filter_sql(filters)
        rows = self._read(
            f"{SELECT_ITEM} WHERE m.user_id = ? AND {where} ORDER BY m.ts, m.pk LIMIT ? OFFSET ?",
            (user_id, *params, limit, offset),
        )
        return [row_to_item(r) for r in rows]

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._read("SELECT count(*) FROM memories")[0][0])
        return int(self._read("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,))[0][0])

    def count_by_kind(self, user_id: str | None = None) -> dict[str, int]:
        if user_id is None:
            rows = self._read("SELECT kind, count(*) FROM memories GROUP BY kind")
        else:
            rows = self._read("SELECT kind, count(*) FROM memories WHERE user_id = ? GROUP BY kind", (user_id,))
        return {str(k): int(n) for k, n in rows}

    def user_count(self) -> int:
        return int(self._read("SELECT count(DISTINCT user_id) FROM memories")[0][0])

    def replace(
        self,
        item: MemoryItem,
        index_text: str | None,
        vector: Vectors | None,
        entry: HistoryEntry,
        aliases: Sequence[AliasTuple] = (),
    ) -> None:
        params = item_params(item, embed_hash(index_text) if index_text is not None else "")
        sets = ", ".join(f"{col} = ?" for col in MUTABLE)
        try:
            with self.atomic() as c:
                row = c.execute(
                    "SELECT pk FROM memories WHERE +user_id = ? AND id = ?", (item.user_id, item.id)
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no memory {item.id!r} for user {item.user_id!r}")
                pk = int(row[0])
                c.execute(f"UPDATE memories SET {sets} WHERE pk = ?", (*params[2:-1], pk))
                self._write_entities(c, pk, item)
                self._write_aliases(c, item.user_id, aliases)
                versions = None
                if index_text is not None and vector is not None:
                    vec = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
                    c.execute("UPDATE memories SET embed_hash = ? WHERE pk = ?", (params[-1], pk))
                    c.execute("UPDATE vectors SET vec = ? WHERE pk = ?", (vec.tobytes(), pk))
                    kept = c.execute("SELECT ctx FROM memories_fts WHERE rowid = ?", (pk,)).fetchone()
                    c.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))
                    c.execute(
                        "INSERT INTO memories_fts (rowid, body, ctx, scope) VALUES (?, ?, ?, ?)",
                        (pk, index_text, kept[0] if kept else "", scope_token(item.user_id)),
                    )
                    versions = self._bump(c, item.user_id)
                self._log(
                    c,
                    item.user_id,
                    item.id,
                    entry.event,
                    entry.at,
                    entry.old_text,
                    entry.new_text,
                    entry.changes,
                )
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        if versions is not None and vector is not None:
            self._vectors.advance(
                item.user_id,
                *versions,
                remove=[pk],
                add=([pk], [item.id], np.asarray(vector, np.float32).reshape(1, -1)),
            )

    def delete(self, user_id: str, memory_id: str, at: datetime) -> builtins.list[str]:
        """Remove a memory; typed memories whose only source it was go too, the others lose that source.

        Returns the ids of every memory removed (the one asked for first).
        """
        try:
            with self.atomic() as c:
                row = c.execute(
                    "SELECT pk FROM memories WHERE +user_id = ? AND id = ?", (user_id, memory_id)
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
                removed = [(int(row[0]), memory_id)]
                self._remove_row(c, user_id, int(row[0]), memory_id, at, {})
                for pk, mid, sources in c.execute(
                    "SELECT pk, id, sources FROM memories m WHERE m.user_id = ? AND m.kind != 'message' AND EXISTS "
                    "(SELECT 1 FROM json_each(m.sources) s WHERE json_extract(s.value, '$.memory_id') = ?)",
                    (user_id, memory_id),
                ).fetchall():
                    kept = [ref for ref in json.loads(sources) if ref.get("memory_id") != memory_id]
                    if kept:
                        c.execute("UPDATE memories SET sources = ? WHERE pk = ?", (json.dumps(kept), int(pk)))
                        self._log(c, user_id, mid, HistoryEvent.UPDATE, at, None, None, {"source_deleted": memory_id})
                    else:
                        removed.append((int(pk), str(mid)))
                        self._remove_row(c, user_id, int(pk), str(mid), at, {"source_deleted": memory_id})
                versions = self._bump(c, user_id)
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        self._vectors.advance(user_id, *versions, remove=[pk for pk, _ in removed])
        return [mid for _, mid in removed]

    def _remove_row(
        self, c: sqlite3.Connection, user_id: str, pk: int, memory_id: str, at: datetime, changes: dict[str, Any]
    ) -> None:
        c.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))
        c.execute("DELETE FROM memories WHERE pk = ?", (pk,))  # vectors and entity rows cascade
        c.execute("DELETE FROM feedback WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
        c.execute(
            "UPDATE history SET old_text = NULL, new_text = NULL, changes = '{}' WHERE user_id = ? AND memory_id = ?",
            (user_id, memory_id),
        )
        self._log(c, user_id, memory_id, HistoryEvent.DELETE, at, None, None, changes)

    def delete_user(self, user_id: str) -> int:
        try:
            with self.atomic() as c:
                n = c.execute("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,)).fetchone()[0]
                c.execute(
                    "DELETE FROM memories_fts WHERE rowid IN (SELECT pk FROM memories WHERE user_id = ?)",
                    (user_id,),
                )
                c.execute("DELETE FROM memories WHERE user_id = ?", (user_id,))
                c.execute("DELETE FROM entities WHERE user_id = ?", (user_id,))
                c.execute("DELETE FROM feedback WHERE user_id = ?", (user_id,))
                c.execute("DELETE FROM history WHERE user_id = ?", (user_id,))
                c.execute("DELETE FROM jobs WHERE user_id = ?", (user_id,))
                c.execute("DELETE FROM archive WHERE user_id = ?", (user_id,))
                self._bump(c, user_id)
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        self._vectors.drop(user_id)
        return int(n)

    def iter_items(self, user_id: str | None = None) -> Iterator[MemoryItem]:
        last = 0
        scope, params = ("m.user_id = ? AND ", [user_id]) if user_id is not None else ("", [])
        while True:
            rows = self._read(
                f"SELECT m.pk, {COLUMNS} FROM memories m WHERE {scope}m.pk > ? ORDER BY m.pk LIMIT 500",
                (*params, last),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield from (row_to_item(r[1:]) for r in rows)

    def record_access(self, user_id: str, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        marks = ", ".join("?" * len(memory_ids))
        try:
            with self.atomic() as c:
                c.execute(
                    f"UPDATE memories SET access_count = access_count + 1, last_accessed = ? "
                    f"WHERE +user_id = ? AND id IN ({marks})",
                    (to_micros(at), user_id, *memory_ids),
                )
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc

    def find_hashes(self, user_id: str, hashes: Sequence[str]) -> dict[str, MemoryItem]:
        """The memory of this user stored under each content hash (if several: the earliest still valid)."""
        out: dict[str, MemoryItem] = {}
        wanted = list(dict.fromkeys(hashes))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in self._read(
                f"{SELECT_ITEM} WHERE m.user_id = ? AND m.content_hash IN ({marks}) "
                "ORDER BY m.valid_until IS NULL, m.pk DESC",
                (user_id, *chunk),
            ):
                item = row_to_item(row)
                out[item.content_hash] = item
        return out

    def count_kinds(self, user_id: str, kinds: Sequence[MemoryKind]) -> int:
        """How many memories of these kinds this user holds (superseded ones included)."""
        if not kinds:
            return 0
        marks = ", ".join("?" * len(kinds))
        rows = self._read(
            f"SELECT count(*) FROM memories WHERE user_id = ? AND kind IN ({marks})",
            (user_id, *[k.value for k in kinds]),
        )
        return int(rows[0][0])

    # -- jobs --------------------------------------------------------------------------------------
    def enqueue(self, job: Job) -> None:
        """Add a job to the durable queue."""
        self.write([], [], np.zeros((0, 0), dtype=np.float32), jobs=[job])

    def claim_job(self, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The oldest queued job (or one whose lease lapsed or whose owner ``is_dead``), now running under
        ``claim`` (its attempt counted); ``None`` when there is none.
        """
        try:
            with self.atomic() as c:
                return jobs_sql.claim(c, to_micros(utcnow()), claim, is_dead)
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc

    def renew_job(self, job_id: str, claim: JobClaim) -> bool:
        """Extend a job's lease; ``False`` when ``claim.owner`` no longer holds it."""
        with self.atomic() as c:
            return jobs_sql.renew(c, job_id, claim)

    def release_job(self, job_id: str, owner: str) -> bool:
        """Queue again a job ``owner`` holds, its attempt not counted."""
        with self.atomic() as c:
            return jobs_sql.release(c, job_id, owner, to_micros(utcnow()))

    def acquire_lock(self, name: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> bool:
        """Take or extend a named lock that holds across processes; ``False`` while another live owner has it."""
        with self.atomic() as c:
            return jobs_sql.acquire_lock(c, name, claim, to_micros(utcnow()), is_dead)

    def release_lock(self, name: str, owner: str) -> None:
        """Let go of a named lock if ``owner`` holds it."""
        with self.atomic() as c:
            jobs_sql.release_lock(c, name, owner)

    def finish_job(self, outcome: JobOutcome) -> None:
        """Record a job's outcome (``JobFencedError`` when its owner no longer holds it)."""
        with self.atomic() as c:
            jobs_sql.finish(c, outcome, to_micros(utcnow()))

    def job(self, user_id: str, job_id: str) -> Job:
        """One job of this user; ``NotFoundError`` when absent (or another user's)."""
        with self._lock:
            found = jobs_sql.get(self._conn, user_id, job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id!r} for user {user_id!r}")
        return found

    def jobs(self, user_id: str | None, state: JobState | None = None, limit: int = 1000) -> builtins.list[Job]:
        """Jobs of one user (or of all), oldest first."""
        with self._lock:
            return jobs_sql.select(self._conn, user_id, state, limit)

    def pending_jobs(self) -> int:
        """How many jobs are queued or running."""
        with self._lock:
            return jobs_sql.pending(self._conn)

    def requeue_jobs(self, states: tuple[JobState, ...], user_id: str | None = None) -> int:
        """Put jobs in these states back in the queue; returns how many."""
        with self.atomic() as c:
            return jobs_sql.requeue(c, states, user_id, to_micros(utcnow()))

    # -- archive -----------------------------------------------------------------------------------
    def evict(self, user_id: str, memory_ids: Sequence[str], at: datetime, *, hard: bool = False) -> int:
        """Move memories out of every index into the archive (or destroy them when ``hard``), logging EVICT."""
        if not memory_ids:
            return 0
        moved: list[int] = []
        try:
            with self.atomic() as c:
                for mid in dict.fromkeys(memory_ids):
                    row = c.execute(
                        f"SELECT m.pk, {_QUALIFIED}, f.body, v.vec FROM memories m JOIN vectors v ON v.pk = m.pk "
                        "JOIN memories_fts f ON f.rowid = m.pk WHERE +m.user_id = ? AND m.id = ?",
                        (user_id, mid),
                    ).fetchone()
                    if row is None:
                        continue
                    pk, item, body, vec = int(row[0]), row_to_item(row[1:-2]), row[-2], row[-1]
                    if hard:
                        self._remove_row(c, user_id, pk, mid, at, {"evicted": True, "hard": True})
                    else:
                        c.execute(
                            "INSERT INTO archive (id, user_id, kind, item, body, vec, archived_at, reason) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (
                                mid,
                                user_id,
                                item.kind.value,
                                item.model_dump_json(),
                                body,
                                vec,
                                to_micros(at),
                                "capacity",
                            ),
                        )
                        c.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))
                        c.execute("DELETE FROM memories WHERE pk = ?", (pk,))
                        self._log(c, user_id, mid, HistoryEvent.EVICT, at, None, None, {"archived": True})
                    moved.append(pk)
                versions = self._bump(c, user_id)
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        self._vectors.advance(user_id, *versions, remove=moved)
        return len(moved)

    def archived(self, user_id: str, limit: int, offset: int) -> builtins.list[ArchivedMemory]:
        """Archived memories of this user, most recently archived first."""
        rows = self._read(
            "SELECT item, archived_at, reason FROM archive WHERE user_id = ? ORDER BY archived_at DESC, pk DESC "
            "LIMIT ? OFFSET ?",
            (user_id, limit, offset),
        )
        return [
            ArchivedMemory(memory=MemoryItem.model_validate_json(r[0]), archived_at=from_micros(int(r[1])), reason=r[2])
            for r in rows
        ]

    def restore(self, user_id: str, memory_id: str, at: datetime) -> MemoryItem:
        """Bring an archived memory back into every index, logging RESTORE."""
        try:
            with self.atomic() as c:
                row = c.execute(
                    "SELECT pk, item, body, vec FROM archive WHERE user_id = ? AND id = ?", (user_id, memory_id)
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no archived memory {memory_id!r} for user {user_id!r}")
                item = MemoryItem.model_validate_json(row[1])
                vec = np.frombuffer(row[3], dtype=np.float32)
                pk = self._insert_row(c, item, str(row[2]), vec)
                c.execute("DELETE FROM archive WHERE pk = ?", (int(row[0]),))
                self._log(c, user_id, memory_id, HistoryEvent.RESTORE, at, None, None, {})
                versions = self._bump(c, user_id)
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"restore rejected by the database: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        self._vectors.advance(user_id, *versions, add=([pk], [memory_id], vec.reshape(1, -1)))
        return item

    # -- feedback ----------------------------------------------------------------------------------
    def add_feedback(self, user_id: str, query: str, memory_id: str, useful: bool, at: datetime) -> None:
        try:
            with self.atomic() as c:
                row = c.execute("SELECT 1 FROM memories WHERE +user_id = ? AND id = ?", (user_id, memory_id)).fetchone()
                if row is None:
                    raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
                c.execute(
                    "INSERT INTO feedback (user_id, query, memory_id, useful, at) VALUES (?, ?, ?, ?, ?)",
                    (user_id, query, memory_id, int(useful), to_micros(at)),
                )
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc

    def feedback(self, user_id: str | None = None) -> builtins.list[tuple[str, str, str, bool]]:
        """Recorded feedback as (user_id, query, memory_id, useful), oldest first; the latest word on a pair wins."""
        scope, params = ("WHERE user_id = ? ", (user_id,)) if user_id is not None else ("", ())
        rows = self._read(f"SELECT user_id, query, memory_id, useful FROM feedback {scope}ORDER BY seq", params)
        latest: dict[tuple[str, str, str], bool] = {}
        for uid, query, mid, useful in rows:
            latest[(str(uid), str(query), str(mid))] = bool(useful)
        return [(u, q, m, v) for (u, q, m), v in latest.items()]

    # -- history -----------------------------------------------------------------------------------
    def _log(
        self,
        c: sqlite3.Connection,
        user_id: str,
        memory_id: str,
        event: HistoryEvent,
        at: datetime,
        old_text: str | None,
        new_text: str | None,
        changes: dict[str, Any],
    ) -> None:
        c.execute(
            "INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                user_id,
                event.value,
                to_micros(at),
                old_text,
                new_text,
                json.dumps(changes, default=str),
            ),
        )

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEntry]:
        rows = self._read(
            "SELECT event, at, old_text, new_text, changes FROM history WHERE user_id = ? AND memory_id = ? ORDER BY seq",
            (user_id, memory_id),
        )
        return [
            HistoryEntry(
                memory_id=memory_id,
                event=HistoryEvent(r[0]),
                at=from_micros(r[1]),
                old_text=r[2],
                new_text=r[3],
                changes=json.loads(r[4]),
            )
            for r in rows
        ]

    # -- text index --------------------------------------------------------------------------------
    def text_search(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        if not terms or (limit is not None and limit <= 0):
            return []
        # One pass over the matches: FTS5 scores every match anyway to rank them, and probing single
        # rows with MATCH afterwards would re-run the whole query per row.
        tail = "" if limit is None else f" ORDER BY s DESC LIMIT {int(limit)}"
        if is_empty(filters) or only_current(filters):
            current = "" if is_empty(filters) else " AND m.valid_until IS NULL"
            rows = self._read(
                f"SELECT m.id, -bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}, 0.0) AS s FROM memories_fts "
                f"JOIN memories m ON m.pk = memories_fts.rowid WHERE memories_fts MATCH ?{current}{tail}",
                (fts_match(user_id, terms),),
            )
        else:
            where, params = filter_sql(filters)
            rows = self._read(
                f"SELECT m.id, -bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}, 0.0) AS s FROM memories_fts "
                f"JOIN memories m ON m.pk = memories_fts.rowid WHERE memories_fts MATCH ? AND m.user_id = ? AND {where}{tail}",
                (fts_match(user_id, terms), user_id, *params),
            )
        return [(str(i), float(s)) for i, s in rows]

    def attributes(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[datetime, float]]:
        out: dict[str, tuple[datetime, float]] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for mid, ts, imp in self._read(
                f"SELECT id, ts, importance FROM memories WHERE +user_id = ? AND id IN ({marks})", (user_id, *chunk)
            ):
                out[str(mid)] = (from_micros(int(ts)), float(imp))
        return out

    def positions_around(
        self, user_id: str, memory_ids: Sequence[str], width: int
    ) -> dict[str, tuple[str | None, int]]:
        """(session, position) of the given memories and of every memory within ``width`` positions of one."""
        out: dict[str, tuple[str | None, int]] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for nid, session, position in self._read(
                "SELECT DISTINCT n.id, n.session_id, n.position FROM memories m JOIN memories n "
                "ON n.user_id = m.user_id AND n.session_id IS m.session_id "
                "AND n.position BETWEEN m.position - ? AND m.position + ? "
                f"WHERE +m.user_id = ? AND m.id IN ({marks})",
                (width, width, user_id, *chunk),
            ):
                out[str(nid)] = (session, int(position))
        return out

    def entity_matches(
        self, user_id: str, entities: Sequence[str], memory_ids: Sequence[str]
    ) -> dict[str, dict[str, bool]]:
        """Which of ``entities`` (canonical names) each given memory involves: entity -> said by it (else mentioned)."""
        if not entities or not memory_ids:
            return {}
        out: dict[str, dict[str, bool]] = {}
        ents = list(dict.fromkeys(entities))
        ids = list(dict.fromkeys(memory_ids))
        emarks = ", ".join("?" * len(ents))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for mid, ent, said_by in self._read(
                # Driven by the candidate ids (CROSS JOIN fixes the order): a speaker may have thousands of rows.
                f"SELECT m.id, e.entity, e.said_by FROM memories m CROSS JOIN memory_entities e ON e.pk = m.pk "
                f"WHERE +m.user_id = ? AND m.id IN ({marks}) AND e.entity IN ({emarks})",
                (user_id, *chunk, *ents),
            ):
                out.setdefault(str(mid), {})[str(ent)] = bool(said_by)
        return out

    def matching(self, user_id: str, memory_ids: Sequence[str], filters: Filters) -> set[str]:
        """Those of the given memories that pass ``filters``."""
        if is_empty(filters):
            return set(memory_ids)
        if only_current(filters):
            return set(memory_ids) - self._superseded(user_id)[1]
        where, params = filter_sql(filters)
        out: set[str] = set()
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self._read(
                f"SELECT m.id FROM memories m WHERE +m.user_id = ? AND m.id IN ({marks}) AND {where}",
                (user_id, *chunk, *params),
            )
            out.update(str(r[0]) for r in rows)
        return out

    def labels(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """(category, intent) of the given memories."""
        out: dict[str, tuple[str | None, str | None]] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for mid, category, intent in self._read(
                f"SELECT id, category, intent FROM memories WHERE +user_id = ? AND id IN ({marks})", (user_id, *chunk)
            ):
                out[str(mid)] = (category, intent)
        return out

    def spans(
        self, user_id: str, memory_ids: Sequence[str]
    ) -> dict[str, tuple[datetime, datetime | None, datetime | None]]:
        """(timestamp, event start, event end) of the given memories."""
        out: dict[str, tuple[datetime, datetime | None, datetime | None]] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for mid, ts, ev_start, ev_end in self._read(
                f"SELECT id, ts, event_time, event_end FROM memories WHERE +user_id = ? AND id IN ({marks})",
                (user_id, *chunk),
            ):
                out[str(mid)] = (
                    from_micros(int(ts)),
                    None if ev_start is None else from_micros(int(ev_start)),
                    None if ev_end is None else from_micros(int(ev_end)),
                )
        return out

    def speakers(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        """Those of ``names`` (canonical forms) that said some memory of this user."""
        wanted = list(dict.fromkeys(names))[:500]
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        rows = self._read(
            f"SELECT DISTINCT entity FROM memory_entities WHERE user_id = ? AND said_by = 1 AND entity IN ({marks})",
            (user_id, *wanted),
        )
        return [str(r[0]) for r in rows]

    def known_entities(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        """Those of ``names`` (canonical forms) that some memory of this user mentions."""
        wanted = list(dict.fromkeys(names))[:500]
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        rows = self._read(
            f"SELECT DISTINCT entity FROM memory_entities WHERE user_id = ? AND entity IN ({marks})", (user_id, *wanted)
        )
        return [str(r[0]) for r in rows]

    # -- vectors -----------------------------------------------------------------------------------
    def _matrix(self, user_id: str) -> UserMatrix:
        version = self._version(user_id)
        held = self._vectors.get(user_id, version)
        if held is not None:
            return held
        with self._lock:
            version = self._version(user_id)
            rows = self._read(
                "SELECT v.pk, m.id, v.vec FROM vectors v JOIN memories m ON m.pk = v.pk WHERE v.user_id = ? ORDER BY v.pk",
                (user_id,),
            )
            dim = self._dim()
            if rows:
                matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()
            else:
                matrix = np.zeros((0, dim), dtype=np.float32)
            held = UserMatrix(version, [int(r[0]) for r in rows], [str(r[1]) for r in rows], matrix)
            if rows:  # an empty matrix may not even know its width yet: never cache one
                self._vectors.put(user_id, held)
            return held

    def _superseded(self, user_id: str) -> tuple[builtins.list[int], set[str]]:
        """Row keys and ids of this user's superseded memories (a partial index keeps this cheap)."""
        rows = self._read("SELECT pk, id FROM memories WHERE user_id = ? AND valid_until IS NOT NULL", (user_id,))
        return [int(r[0]) for r in rows], {str(r[1]) for r in rows}

    def _dim(self) -> int:
        ident = self.embedder_identity()
        return ident[1] if ident else 0

    def _allowed_positions(self, user_id: str, held: UserMatrix, filters: Filters) -> np.ndarray | None:
        if is_empty(filters):
            return None
        where, params = filter_sql(filters)
        rows = self._read(f"SELECT m.pk FROM memories m WHERE m.user_id = ? AND {where}", (user_id, *params))
        return held.positions([int(r[0]) for r in rows])

    def vector_search(
        self, user_id: str, query: Vectors, limit: int, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        held = self._matrix(user_id)
        if held.matrix.shape[0] == 0 or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if only_current(filters):
            # Superseded memories are few: score everything and push them out of reach.
            stale = held.positions(self._superseded(user_id)[0])
            scores = held.matrix @ q
            if stale.size:
                scores[stale] = -np.inf
                limit = min(limit, held.matrix.shape[0] - stale.size)
            order = top_k(scores, limit)
            return [(held.ids[i], float(scores[i])) for i in order]
        allowed = self._allowed_positions(user_id, held, filters)
        if allowed is None:
            scores = held.matrix @ q
            order = top_k(scores, limit)
            return [(held.ids[i], float(scores[i])) for i in order]
        if allowed.size == 0:
            return []
        scores = held.matrix[allowed] @ q
        order = top_k(scores, limit)
        return [(held.ids[int(allowed[i])], float(scores[i])) for i in order]

    def vector_scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        held = self._matrix(user_id)
        pos = held.id_positions(list(dict.fromkeys(memory_ids)))
        if not pos:
            return {}
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        scores = held.matrix[pos] @ q
        return {held.ids[p]: float(s) for p, s in zip(pos, scores, strict=True)}

    def cached_vectors(self, embed_hashes: Sequence[str]) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        hashes = list(dict.fromkeys(embed_hashes))
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for h, blob in self._read(
                f"SELECT m.embed_hash, v.vec FROM memories m JOIN vectors v ON v.pk = m.pk WHERE m.embed_hash IN ({marks})",
                chunk,
            ):
                out[str(h)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def embedder_identity(self) -> tuple[str, int] | None:
        rows = self._read("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')")
        meta = dict(rows)
        if "embedder" not in meta:
            return None
        return str(meta["embedder"]), int(meta["dim"])

    def set_embedder_identity(self, identity: str, dim: int) -> None:
        with self.atomic() as c:
            for key, value in (("embedder", identity), ("dim", str(dim))):
                c.execute(
                    "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def reindex_begin(self, identity: str, dim: int) -> None:
        """Start (or resume, for the same model) writing new vectors beside the live ones."""
        with self.atomic() as c:
            reindex_sql.begin(c, identity, dim)

    def reindex_pending(self, after: int, limit: int) -> builtins.list[tuple[int, MemoryItem]]:
        """Up to ``limit`` memories past row key ``after`` that still lack a new vector."""
        with self._lock:
            return reindex_sql.pending(self._conn, after, limit)

    def reindex_stage(self, rows: Sequence[tuple[int, Vectors]], identity: str, dim: int, *, final: bool) -> bool:
        """Write new vectors beside the live ones; with ``final`` also switch to them and record the new model in
        the same transaction, if no memory lacks one (returns whether it switched).
        """
        blobs = [(pk, np.ascontiguousarray(vec, dtype=np.float32).reshape(-1).tobytes()) for pk, vec in rows]
        try:
            with self.atomic() as c:
                reindex_sql.stage(c, blobs)
                switched = final and reindex_sql.switch(c, identity, dim)
                if switched:
                    for (user_id,) in c.execute("SELECT DISTINCT user_id FROM vectors").fetchall():
                        self._bump(c, user_id)
        except sqlite3.DatabaseError as exc:
            raise _translate(exc, self._path) from exc
        if switched:
            self._vectors.drop()
        return switched

    def size_bytes(self) -> int:
        if self._path == ":memory:":
            return 0
        base = Path(self._path)
        return sum(p.stat().st_size for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists())


def _previous_turn(c: sqlite3.Connection, item: MemoryItem) -> str:
    """The text of the turn before ``item`` in its session: indexed beside it, so that an answer ("A sunset.") is
    found by the words of the question it answers ("What did you paint?").
    """
    if item.kind != MemoryKind.MESSAGE or not item.position:
        return ""
    row = c.execute(
        "SELECT text FROM memories WHERE user_id = ? AND session_id IS ? AND position = ? AND kind = 'message'",
        (item.user_id, item.session_id, item.position - 1),
    ).fetchone()
    return str(row[0]) if row else ""


def _split_sql(script: str) -> builtins.list[str]:
    """Split a migration script into statements (no semicolons occur inside these statements)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def _translate(exc: sqlite3.DatabaseError, path: str) -> StoreError:
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreError(f"{path} is locked by another writer: {text}")
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return CorruptStoreError(f"{path} is damaged: {text}")
    return StoreError(f"{path}: {text}")
