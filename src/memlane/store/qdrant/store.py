"""``SQLiteQdrantStore``: the SQLite store with its vectors searched in Qdrant (records, text and the log in SQLite)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from memlane.embedding.base import Vectors
from memlane.models import Filters
from memlane.store.qdrant.mirror import QdrantMirror
from memlane.store.qdrant.target import QdrantTarget
from memlane.store.records import ScoredIds
from memlane.store.sqlite import SQLiteStore

log = logging.getLogger(__name__)


class SQLiteQdrantStore(SQLiteStore):
    """Every capability of ``SQLiteStore``; vector search and scores go to a Qdrant collection kept in step with the
    database's change log (``QdrantMirror``), repaired on open.
    """

    _cache: QdrantMirror

    def __init__(
        self, path: Path | str, target: QdrantTarget, *, collection: str | None = None, read_only: bool = False
    ) -> None:
        super().__init__(path, read_only=read_only)
        try:
            self._cache = QdrantMirror(self._db, target, collection)
            done = self._cache.repair()
        except BaseException:
            self._db.close()
            raise
        log.info("vectors of %s in %s: %s", self._db.path, target.name, done)

    @property
    def vectors(self) -> QdrantMirror:
        """The Qdrant side: its collection, ``sync`` and ``repair``."""
        return self._cache

    def vector_search(self, user_id: str, query: Vectors, limit: int, filters: Filters) -> ScoredIds:
        return self._cache.search(user_id, query, limit, filters)

    def vector_scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        return self._cache.scores(user_id, query, memory_ids)
