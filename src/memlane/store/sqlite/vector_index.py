"""Vectors in SQLite (the source of truth) searched exactly through each user's in-process matrix; model identity."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from memlane.embedding.base import Vectors
from memlane.models import Filters, MemoryItem
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.reads import iter_rows, superseded
from memlane.store.sqlite.rows import filter_sql, is_empty, only_current
from memlane.store.sqlite.vectors import MatrixCache, UserMatrix, top_k


class SQLiteVectorIndex:
    """Exact cosine search (vectors are unit-normalised) over a user's cached matrix, refreshed by scope version."""

    _db: Database
    _cache: MatrixCache

    def _matrix(self, user_id: str) -> UserMatrix:
        version = self._db.version(user_id)
        held = self._cache.get(user_id, version)
        if held is not None:
            return held
        with self._db.lock:
            version = self._db.version(user_id)
            rows = self._db.read(
                "SELECT v.pk, m.id, v.vec FROM vectors v JOIN memories m ON m.pk = v.pk WHERE v.user_id = ? ORDER BY v.pk",
                (user_id,),
            )
            if rows:
                matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()
            else:
                ident = self.embedder_identity()
                matrix = np.zeros((0, ident[1] if ident else 0), dtype=np.float32)
            held = UserMatrix(version, [int(r[0]) for r in rows], [str(r[1]) for r in rows], matrix)
            if rows:  # an empty matrix may not even know its width yet: never cache one
                self._cache.put(user_id, held)
            return held

    def _allowed_positions(self, user_id: str, held: UserMatrix, filters: Filters) -> npt.NDArray[np.int64] | None:
        if is_empty(filters):
            return None
        where, params = filter_sql(filters)
        rows = self._db.read(f"SELECT m.pk FROM memories m WHERE m.user_id = ? AND {where}", (user_id, *params))
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
            stale = held.positions(superseded(self._db, user_id)[0])
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
