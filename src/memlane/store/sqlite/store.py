"""``SQLiteStore``: wires the SQLite capabilities (one file: rows, FTS5, vectors, history, jobs) into one ``Store``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from memlane.models import Compaction
from memlane.store.alias_tables import AliasTables
from memlane.store.ann import IndexSettings
from memlane.store.sqlite.ann_feed import AnnIndexes
from memlane.store.sqlite.archive import SQLiteArchive
from memlane.store.sqlite.candidates import SQLiteCandidateIndex
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.entities import SQLiteEntityIndex
from memlane.store.sqlite.feedback import SQLiteFeedback
from memlane.store.sqlite.graph import SQLiteGraph
from memlane.store.sqlite.history import SQLiteHistory
from memlane.store.sqlite.hot_feed import HotScopes
from memlane.store.sqlite.passages import SQLitePassages
from memlane.store.sqlite.queue import SQLiteJobQueue
from memlane.store.sqlite.reads import SQLiteReads
from memlane.store.sqlite.security import SQLiteSecurity
from memlane.store.sqlite.sourced import SQLiteSourced
from memlane.store.sqlite.structured import SQLiteStructuredIndex
from memlane.store.sqlite.text import SQLiteTextIndex, enable_secure_delete
from memlane.store.sqlite.timeline import SQLiteTimeline
from memlane.store.sqlite.transfer import SQLiteTransfer
from memlane.store.sqlite.validity import SQLiteValidity
from memlane.store.sqlite.vector_index import SQLiteVectorIndex
from memlane.store.sqlite.writes import SQLiteWrites


class SQLiteStore(
    SQLiteReads,
    SQLiteWrites,
    SQLiteTextIndex,
    SQLiteVectorIndex,
    SQLiteCandidateIndex,
    SQLiteEntityIndex,
    SQLiteStructuredIndex,
    SQLiteValidity,
    SQLiteGraph,
    SQLiteFeedback,
    SQLiteHistory,
    SQLiteJobQueue,
    SQLiteArchive,
    SQLiteSecurity,
    SQLiteTransfer,
    SQLitePassages,
    SQLiteTimeline,
    SQLiteSourced,
):
    """The default store. Thread-safe: one connection guarded by a lock; WAL lets other processes read.

    Each capability is its own class over the shared ``Database`` and vector cache; this class only joins them.
    """

    def __init__(
        self, path: Path | str, *, read_only: bool = False, index_settings: IndexSettings | None = None
    ) -> None:
        self._db = Database(path, read_only=read_only)
        self._cache = AnnIndexes(self._db, index_settings)
        self._hot = HotScopes(self._db)
        self._aliases = AliasTables()
        self._fts_secure_delete = False
        if not self._db.read_only:
            self._cache.sweep()  # index folders of users deleted by a process that died before removing them
            with self._db.atomic() as c:
                self._fts_secure_delete = enable_secure_delete(c)

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    @property
    def location(self) -> str:
        return self._db.path

    def size_bytes(self) -> int:
        return self._db.size_bytes()

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        with self._hot.serving(), self._db.pinned():
            yield

    def compact(self) -> Compaction:
        before = self.size_bytes()
        self._db.vacuum()
        swept = self._cache.sweep()  # index folders of users who hold no vectors any more
        rewritten = ["database file"] if self._db.path != ":memory:" else []
        notes = [f"removed {swept} vector index folder(s) of users without memories"] if swept else []
        return Compaction(
            path=self.location, size_before=before, size_after=self.size_bytes(), rewritten=rewritten, notes=notes
        )

    def close(self) -> None:
        try:
            self._cache.close()
        finally:
            self._db.close()
