"""Vectors in SQLite (the source of truth) searched through each user's vector index (``ann_feed``); model identity."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from memlane.embedding.base import Vectors
from memlane.models import Filters, MemoryItem
from memlane.store.sqlite.ann_feed import AnnIndexes
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.reads import iter_rows, superseded
from memlane.store.sqlite.rows import filter_sql, is_empty, only_current


class SQLiteVectorIndex:
    """Cosine search (vectors are unit-normalised) through each user's ``VectorIndex``, fed by the change log."""

    _db: Database
    _cache: AnnIndexes

    def _allowed_keys(self, user_id: str, filters: Filters) -> builtins.list[int]:
        where, params = filter_sql(filters)
        rows = self._db.read(f"SELECT m.pk FROM memories m WHERE m.user_id = ? AND {where}", (user_id, *params))
        return [int(r[0]) for r in rows]

    def vector_search(
        self, user_id: str, query: Vectors, limit: int, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        index = self._cache.get(user_id)
        if index is None or not len(index) or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if only_current(filters):
            # Superseded memories are few: leave them out of an unfiltered search.
            hits = index.search(q, limit, excluded=superseded(self._db, user_id)[0])
        elif is_empty(filters):
            hits = index.search(q, limit)
        else:
            allowed = self._allowed_keys(user_id, filters)
            if not allowed:
                return []
            hits = index.search(q, limit, allowed=allowed)
        ids = self._cache.ids_of([h.key for h in hits])
        return [(ids[h.key], h.score) for h in hits if h.key in ids]

    def vector_scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        index = self._cache.get(user_id)
        if index is None or not memory_ids:
            return {}
        keys = self._cache.keys_of(user_id, list(dict.fromkeys(memory_ids)))
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        return {keys[h.key]: h.score for h in index.scores(q, list(keys))}

    def cached_vectors(self, embed_hashes: Sequence[str]) -> dict[str, Vectors]:
        rows = self._db.read_in(
            "SELECT m.embed_hash, v.vec FROM memories m JOIN vectors v ON v.pk = m.pk WHERE m.embed_hash IN ({marks})",
            embed_hashes,
        )
        return {str(h): np.frombuffer(blob, dtype=np.float32) for h, blob in rows}

    def embedder_identity(self) -> tuple[str, int] | None:
        meta = dict(self._db.read("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"))
        if "embedder" not in meta:
            return None
        return str(meta["embedder"]), int(meta["dim"])

    def set_embedder_identity(self, identity: str, dim: int) -> None:
        with self._db.atomic() as c:
            for key, value in (("embedder", identity), ("dim", str(dim))):
                c.execute(
                    "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def reindex_batches(self, batch_size: int) -> Iterator[builtins.list[MemoryItem]]:
        yield from iter_rows(self._db, None, batch_size)

    def write_vectors(self, vectors: Mapping[str, Vectors]) -> None:
        with self._db.atomic() as c:
            for memory_id, vec in vectors.items():
                blob = np.ascontiguousarray(vec, dtype=np.float32).reshape(-1).tobytes()
                c.execute(
                    "UPDATE vectors SET vec = ? WHERE pk = (SELECT pk FROM memories WHERE id = ?)", (blob, memory_id)
                )
            for (user_id,) in c.execute("SELECT DISTINCT user_id FROM vectors").fetchall():
                self._db.bump(c, str(user_id))
        self._cache.drop()
