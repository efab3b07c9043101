"""Each user's vector index (``memlane.store.ann``) fed from SQLite's change log, opened and saved beside the file.

Triggers on ``vectors`` append ``(seq, user_id, pk)`` to ``vector_log`` in the transaction of every insert, update and
delete (cascades included), whoever writes: this process, another one, or one that died right after its commit. An
index holds the last ``seq`` it applied; it catches up after each of this process's writes and before each search
(one indexed range query, normally empty), replaying the logged keys with their current vectors. Indexes are saved
under ``<db>.ann/<user hash>/`` when closed and after many changes; the log of a user is pruned up to what a save
holds, and ``vector_log_floor`` records how far, so an index older than that is rebuilt whole. ``:memory:``
databases keep their indexes in memory only.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from memlane.embedding.base import Vectors
from memlane.errors import StoreError
from memlane.store.ann import Batch, Change, IndexSettings, VectorIndex, apply_changes, open_index
from memlane.store.ann.files import remove_folder
from memlane.store.sqlite.db import Database

log = logging.getLogger(__name__)

#: Rows per snapshot batch when an index is built from the ``vectors`` table.
SNAPSHOT_BATCH = 50_000
#: An index is saved once this many changes (and a quarter of its size) are not in its file yet.
SAVE_AFTER = 2_000


class SQLiteFeed:
    """The ``ChangeFeed`` of one user over the ``vectors`` table and its log."""

    def __init__(self, db: Database, user_id: str) -> None:
        self._db = db
        self._user = user_id

    def _floor(self) -> int:
        rows = self._db.read("SELECT seq FROM vector_log_floor WHERE user_id = ?", (self._user,))
        return int(rows[0][0]) if rows else 0

    def head(self) -> int:
        rows = self._db.read("SELECT max(seq) FROM vector_log WHERE user_id = ?", (self._user,))
        return max(int(rows[0][0] or 0), self._floor())

    def changes_since(self, seq: int) -> Iterable[Change] | None:
        if self._floor() > seq:
            return None
        rows = self._db.read(
            "SELECT l.seq, l.pk, v.vec FROM vector_log l LEFT JOIN vectors v ON v.pk = l.pk AND v.user_id = l.user_id "
            "WHERE l.user_id = ? AND l.seq > ? ORDER BY l.seq",
            (self._user, seq),
        )
        return [Change(int(s), int(pk), None if v is None else np.frombuffer(v, dtype=np.float32)) for s, pk, v in rows]

    def snapshot(self) -> tuple[int, Iterator[Batch]]:
        head = self.head()  # first: rows read after it may be newer, and replaying those again is harmless
        rows = self._db.read("SELECT pk, vec FROM vectors WHERE user_id = ? ORDER BY pk", (self._user,))

        def batches() -> Iterator[Batch]:
            for lo in range(0, len(rows), SNAPSHOT_BATCH):
                part = rows[lo : lo + SNAPSHOT_BATCH]
                keys = np.fromiter((r[0] for r in part), dtype=np.int64, count=len(part))
                vecs = np.frombuffer(b"".join(r[1] for r in part), dtype=np.float32).reshape(len(part), -1)
                yield Batch(keys, vecs)

        return head, batches()

    def prune(self, upto: int) -> None:
        """Drop the user's log up to ``upto`` (held by a saved file) and record the floor."""
        with self._db.atomic() as c:
            c.execute("DELETE FROM vector_log WHERE user_id = ? AND seq <= ?", (self._user, upto))
            c.execute(
                "INSERT INTO vector_log_floor VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET seq = excluded.seq "
                "WHERE excluded.seq > vector_log_floor.seq",
                (self._user, upto),
            )


class AnnIndexes:
    """The open indexes of a database, one per user, kept current with its change log."""

    def __init__(self, db: Database, settings: IndexSettings | None = None) -> None:
        self._db = db
        self._settings = settings  # None: IndexSettings' defaults
        self._lock = threading.RLock()
        self._open: dict[str, VectorIndex] = {}
        # The database generation (``Database.generation``) at which the identity was read and each open index
        # last caught up: while it has not moved, neither can have changed, and a search asks SQLite nothing more.
        self._ident: tuple[str, int] | None = None
        self._ident_at: tuple[int, int] | None = None
        self._synced: dict[str, tuple[int, int]] = {}
        self._root = None if db.path == ":memory:" else Path(db.path + ".ann")

    def _identity(self) -> tuple[str, int] | None:
        meta = dict(self._db.read("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim', 'vector_index_id')"))
        if "embedder" not in meta:
            return None
        if "vector_index_id" not in meta:  # ties saved files to this database, not a copy made before them
            if self._db.read_only:  # cannot tie files to it: keep indexes in memory only
                self._root = None
                return f"{meta['embedder']}|read-only", int(meta["dim"])
            with self._db.atomic() as c:
                c.execute("INSERT OR IGNORE INTO meta VALUES ('vector_index_id', ?)", (uuid.uuid4().hex,))
            return self._identity()
        return f"{meta['embedder']}|{meta['vector_index_id']}", int(meta["dim"])

    def _folder(self, user_id: str) -> Path | None:
        if self._root is None:
            return None
        return self._root / hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:24]

    def get(self, user_id: str) -> VectorIndex | None:
        """The user's index, current with the log (opened, replayed or built on first use); ``None`` before vectors."""
        with self._lock:
            at = self._db.generation()  # before any read: a change after it moves it again
            if at != self._ident_at:
                self._ident, self._ident_at = self._identity(), at
            if self._ident is None:
                return None
            identity, dim = self._ident
            held = self._open.get(user_id)
            if held is not None and held.identity == identity and held.dim == dim:
                if self._synced.get(user_id) == at:
                    if held.needs_save:  # a graph built in the background (or compacted) is not in the file yet
                        self._save(SQLiteFeed(self._db, user_id), held)
                    return held
                feed = SQLiteFeed(self._db, user_id)
                changes = feed.changes_since(held.applied_seq)
                if changes is not None:
                    apply_changes(held, changes)
                    self._synced[user_id] = at
                    self._maybe_save(feed, held)
                    return held
            feed = SQLiteFeed(self._db, user_id)
            index, report = open_index(
                feed, dim, identity, folder=self._folder(user_id), settings=self._settings, save=False
            )
            if report.action != "loaded":
                log.info("vector index of one user in %s %s: %s", self._db.path, report.action, report.reason)
                self._save(feed, index)
            self._open[user_id] = index
            self._synced[user_id] = at
            return index

    def _maybe_save(self, feed: SQLiteFeed, index: VectorIndex) -> None:
        if index.folder is not None and (index.unsaved_changes >= max(SAVE_AFTER, len(index) // 4) or index.needs_save):
            self._save(feed, index)

    def _save(self, feed: SQLiteFeed, index: VectorIndex, *, closing: bool = False) -> None:
        """Save the index and prune the log it covers. The file is a cache of SQLite: a failed save is logged and
        costs only a replay (or a rebuild) at the next open, never an error for the read or write that caused it.
        """
        if self._db.read_only:
            return  # the saved file (if any) stays as it is; this process keeps its index in memory
        try:
            meta = index.save(closing=closing)
        except (StoreError, OSError) as exc:
            log.warning("vector index not saved (it is rebuilt from the database when needed): %s", exc)
            return
        if meta is not None:
            feed.prune(meta.applied_seq)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the graphs being built in the background, then save those that replaced an exact file; whether
        every build had ended within ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            held = list(self._open.items())
        for _, index in held:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not index.wait_built(left):
                return False
        with self._lock:
            for user_id, index in held:
                if self._open.get(user_id) is index and index.needs_save:
                    self._save(SQLiteFeed(self._db, user_id), index)
        return True

    def erased(self, user_id: str) -> None:
        """After a delete (or a re-embedding) committed: remove the user's saved index file, which still holds the old
        vector (an HNSW graph even keeps removed vectors' bytes in its slots). The open index goes on serving; the
        next save writes a compacted file, and a process that dies first rebuilds it from the database.
        """
        with self._lock:
            folder = self._folder(user_id)
            if folder is not None and folder.exists():
                remove_folder(folder)

    def forget(self, user_id: str) -> None:
        """After a user's data was deleted: close their index and remove its folder, vectors and all."""
        with self._lock:
            gone = self._open.pop(user_id, None)
            if gone is not None:
                gone.stop_build()
            self._synced.pop(user_id, None)
            folder = self._folder(user_id)
            if folder is not None:
                remove_folder(folder)

    def sweep(self) -> int:
        """Remove index folders of users who hold no vectors any more (e.g. a ``delete_all`` that crashed before it
        could remove the folder); how many went.
        """
        if self._root is None or not self._root.is_dir():
            return 0
        live = {
            hashlib.sha256(str(u).encode("utf-8")).hexdigest()[:24]
            for (u,) in self._db.read("SELECT DISTINCT user_id FROM vectors")
        }
        gone = 0
        for folder in self._root.iterdir():
            if folder.is_dir() and folder.name not in live:
                remove_folder(folder)
                gone += 1
        return gone

    # The write paths call these after each commit (the names of the matrix cache they replace).
    def advance(
        self,
        user_id: str,
        old_version: int,
        new_version: int,
        *,
        add: tuple[Sequence[int], Sequence[str], Vectors] | None = None,
        remove: Sequence[int] = (),
    ) -> None:
        """Bring an open index up to the commit just made (the log holds the change; the arguments are not needed).

        Inside an enclosing transaction nothing is applied: it may still roll back, and the next search catches up.
        """
        with self._lock:
            if user_id in self._open and not self._db.conn.in_transaction:
                self.get(user_id)

    def drop(self, user_id: str | None = None) -> None:
        """Forget open indexes (all, or one user's); they reopen from their files and the log."""
        with self._lock:
            self._ident_at = None
            gone = list(self._open.values()) if user_id is None else [self._open.get(user_id)]
            for index in gone:
                if index is not None:
                    index.stop_build()
            if user_id is None:
                self._open.clear()
                self._synced.clear()
            else:
                self._open.pop(user_id, None)
                self._synced.pop(user_id, None)

    def close(self) -> None:
        """Save every index with changes its file lacks."""
        with self._lock:
            for user_id, index in self._open.items():
                index.stop_build()
                if index.folder is not None and (index.unsaved_changes > 0 or index.needs_save):
                    self._save(SQLiteFeed(self._db, user_id), index, closing=True)
            self._open.clear()
            self._synced.clear()

    def keys_of(self, user_id: str, memory_ids: Sequence[str]) -> dict[int, str]:
        """Row keys of the user's memory ids."""
        rows = self._db.read_in(
            "SELECT pk, id FROM memories WHERE +user_id = ? AND id IN ({marks})", memory_ids, before=(user_id,)
        )
        return {int(pk): str(mid) for pk, mid in rows}

    def ids_of(self, pks: Sequence[int]) -> dict[int, str]:
        """Memory ids of row keys."""
        return {
            int(pk): str(mid) for pk, mid in self._db.read_in("SELECT pk, id FROM memories WHERE pk IN ({marks})", pks)
        }
