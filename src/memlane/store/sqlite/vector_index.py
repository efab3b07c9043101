"""Vectors in SQLite (the source of truth) searched through each user's vector index (``ann_feed``); model identity."""

from __future__ import annotations

import builtins
import time
from collections.abc import Mapping, Sequence

import numpy as np

import memlane.store.sqlite.reindex as reindex_sql
from memlane.embedding.base import Vectors
from memlane.models import Filters, MemoryItem
from memlane.store.sqlite.ann_feed import AnnIndexes
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.hot_feed import HotScopes
from memlane.store.sqlite.reads import superseded
from memlane.store.sqlite.rows import filter_sql, is_empty, only_current


class SQLiteVectorIndex:
    """Cosine search (vectors are unit-normalised) through each user's ``VectorIndex``, fed by the change log."""

    _db: Database
    _cache: AnnIndexes
    _hot: HotScopes
    _identity_seen: tuple[tuple[int, int], tuple[str, int] | None] | None = None  # (generation, identity) last read

    def _allowed_keys(self, user_id: str, filters: Filters) -> builtins.list[int]:
        where, params = filter_sql(filters)
        rows = self._db.read(f"SELECT m.pk FROM memories m WHERE m.user_id = ? AND {where}", (user_id, *params))
        return [int(r[0]) for r in rows]

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Block until no open scope's graph or read model is being built in the background; whether none is."""
        started = time.monotonic()
        if not self._cache.settle(timeout):
            return False
        return self._hot.settle(None if timeout is None else max(0.0, timeout - (time.monotonic() - started)))

    def vector_search(
        self, user_id: str, query: Vectors, limit: int, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        index = self._cache.get(user_id)
        if index is None or not len(index) or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        # The index is searched outside the connection's lock (only what the model knows is read under it).
        if only_current(filters):
            # Superseded memories are few: leave them out of an unfiltered search.
            with self._hot.using(user_id) as model:
                stale = model.superseded_pks() if model is not None else superseded(self._db, user_id)[0]
            keys, scores = index.search_arrays(q, limit, excluded=stale)
        elif is_empty(filters):
            keys, scores = index.search_arrays(q, limit)
        else:
            allowed = self._allowed_keys(user_id, filters)
            if not allowed:
                return []
            keys, scores = index.search_arrays(q, limit, allowed=allowed)
        pks, values = keys.tolist(), scores.tolist()
        with self._hot.using(user_id) as model:
            if model is not None:
                return [(mid, s) for mid, s in zip(model.ids_of_pks(pks), values, strict=True) if mid is not None]
        ids = self._cache.ids_of(pks)
        return [(ids[pk], s) for pk, s in zip(pks, values, strict=True) if pk in ids]

    def vector_scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        index = self._cache.get(user_id)
        if index is None or not memory_ids:
            return {}
        with self._hot.using(user_id) as model:
            if model is not None:
                keys = {pk: mid for mid in dict.fromkeys(memory_ids) if (pk := model.pk_of(mid)) is not None}
            else:
                keys = self._cache.keys_of(user_id, list(dict.fromkeys(memory_ids)))
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        present, scores = index.scores_arrays(q, list(keys))
        return dict(zip(map(keys.__getitem__, present.tolist()), scores.tolist(), strict=True))

    def cached_vectors(self, embed_hashes: Sequence[str]) -> dict[str, Vectors]:
        rows = self._db.read_in(
            "SELECT m.embed_hash, v.vec FROM memories m JOIN vectors v ON v.pk = m.pk WHERE m.embed_hash IN ({marks})",
            embed_hashes,
        )
        return {str(h): np.frombuffer(blob, dtype=np.float32) for h, blob in rows}

    def embedder_identity(self) -> tuple[str, int] | None:
        at = self._db.generation()  # every search asks: read the table again only when the file may have changed
        seen = self._identity_seen
        if seen is not None and seen[0] == at:
            return seen[1]
        meta = dict(self._db.read("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"))
        identity = (str(meta["embedder"]), int(meta["dim"])) if "embedder" in meta else None
        self._identity_seen = (at, identity)
        return identity

    def set_embedder_identity(self, identity: str, dim: int) -> None:
        with self._db.atomic() as c:
            for key, value in (("embedder", identity), ("dim", str(dim))):
                c.execute(
                    "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def reindex_begin(self, identity: str, dim: int) -> None:
        with self._db.atomic() as c:
            reindex_sql.begin(c, identity, dim)

    def reindex_pending(self, after: str | None, limit: int) -> builtins.list[MemoryItem]:
        with self._db.reading() as c:
            return reindex_sql.pending(c, after, limit)

    def reindex_stage(self, vectors: Mapping[str, Vectors], identity: str, dim: int, *, final: bool) -> bool:
        blobs = {mid: np.ascontiguousarray(v, dtype=np.float32).reshape(-1).tobytes() for mid, v in vectors.items()}
        with self._db.atomic() as c:
            reindex_sql.stage(c, blobs)
            switched = final and reindex_sql.switch(c, identity, dim)
            if switched:
                for (user_id,) in c.execute("SELECT DISTINCT user_id FROM vectors").fetchall():
                    self._db.bump(c, str(user_id))
        if switched:
            self._cache.drop()
        return switched
