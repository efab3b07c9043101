"""``HnswVectors``: a usearch HNSW graph over inner product, with upserts, removals, lookups and files.

usearch was chosen by measurement (``docs/ann.md``): a prebuilt wheel, one file per index, true removal, recall
≥ 0.98 at 1M on memlane's vectors with single-query latency well under a millisecond. It stores the float32 vectors
itself, so exact rescoring and filtered exact search read them back from it. Not thread-safe on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memlane.errors import StoreError
from memlane.store.ann.types import F32, I64, IndexSettings

#: Batches at least this large are inserted on every core; smaller ones on the calling thread.
PARALLEL_ADD = 64


def _usearch() -> Any:
    try:
        from usearch import index as usearch_index
    except ImportError as e:  # pragma: no cover - usearch is a base dependency
        raise StoreError("the vector index needs usearch; reinstall memlane") from e
    return usearch_index


class HnswVectors:
    """An HNSW graph keyed by the owner's integer keys (stored as unsigned 64-bit)."""

    def __init__(self, dim: int, settings: IndexSettings, *, index: Any = None) -> None:
        self.dim = dim
        self.settings = settings
        if index is None:
            index = _usearch().Index(
                ndim=dim,
                metric="ip",
                dtype="f32",
                connectivity=settings.connectivity,
                expansion_add=settings.expansion_add,
                expansion_search=settings.expansion_search,
            )
        self._index = index
        #: Vectors removed or replaced since this graph was built: usearch keeps their bytes in its slots (and in a
        #: saved file) until the graph is rebuilt, so erasure needs ``compacted()`` before a save.
        self.tombstones = 0

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and key >= 0 and bool(self._index.contains(key))

    def add(self, keys: I64, vectors: F32, *, threads: int | None = None) -> None:
        """Insert or replace (a key already held is removed first: usearch keeps one vector per key).

        ``threads``: how many threads insert (0: every core); by default every core for a batch of at least
        ``PARALLEL_ADD``, else the calling thread.
        """
        if not len(keys):
            return
        ukeys = keys.astype(np.uint64)
        held = np.asarray(self._index.contains(ukeys), dtype=bool).reshape(-1)
        if held.any():
            self._index.remove(ukeys[held])
            self.tombstones += int(held.sum())
        if threads is None:
            threads = 0 if len(keys) >= PARALLEL_ADD else 1
        self._index.add(ukeys, np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)

    def remove(self, keys: I64) -> int:
        """Remove the keys held (others are ignored); how many were removed."""
        if not len(keys):
            return 0
        ukeys = keys.astype(np.uint64)
        held = np.asarray(self._index.contains(ukeys), dtype=bool).reshape(-1)
        if not held.any():
            return 0
        self._index.remove(ukeys[held])
        self.tombstones += int(held.sum())
        return int(held.sum())

    def keys(self) -> I64:
        """Every key held."""
        return np.asarray(self._index.keys, dtype=np.int64)

    def compacted(self) -> HnswVectors:
        """A new graph over the live vectors only, with no bytes of removed or replaced ones left anywhere."""
        present, vectors = self.vectors_of(self.keys())
        return HnswVectors.build(self.dim, self.settings, present, vectors)

    def search(self, query: F32, count: int) -> tuple[I64, F32]:
        """Up to ``count`` approximate nearest keys and their inner products, best first."""
        if count <= 0 or not len(self):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        ef = self.settings.expansion_search
        if count > ef:
            self._index.expansion_search = count
        try:
            found = self._index.search(query, count, threads=1)
        finally:
            if count > ef:
                self._index.expansion_search = ef
        keys = np.asarray(found.keys, dtype=np.int64)
        scores = (1.0 - np.asarray(found.distances, dtype=np.float32)).astype(np.float32)
        return keys, scores

    def vectors_of(self, keys: I64) -> tuple[I64, F32]:
        """The keys held among ``keys`` and their stored vectors, one row each."""
        if not len(keys):
            return keys, np.empty((0, self.dim), dtype=np.float32)
        ukeys = keys.astype(np.uint64)
        held = np.asarray(self._index.contains(ukeys), dtype=bool).reshape(-1)
        present = keys[held]
        if not len(present):
            return present, np.empty((0, self.dim), dtype=np.float32)
        got = self._index.get(present.astype(np.uint64), dtype=np.float32)
        return present, np.asarray(got, dtype=np.float32).reshape(len(present), self.dim)

    def save(self, path: Path) -> None:
        self._index.save(str(path))

    @classmethod
    def load(cls, path: Path, dim: int, settings: IndexSettings) -> HnswVectors:
        """The graph saved at ``path`` (its own header must agree with ``dim``)."""
        try:
            index = _usearch().Index.restore(str(path))
        except (RuntimeError, ValueError, OSError) as e:
            raise StoreError(f"cannot read the vector index {path}: {e}") from e
        if index is None or int(index.ndim) != dim:
            raise StoreError(f"the vector index {path} is not a {dim}-dimensional index")
        index.expansion_search = settings.expansion_search
        index.expansion_add = settings.expansion_add
        return cls(dim, settings, index=index)

    @classmethod
    def build(cls, dim: int, settings: IndexSettings, keys: I64, vectors: F32) -> HnswVectors:
        """A graph over the given vectors (one batch insert)."""
        out = cls(dim, settings)
        if len(keys):
            out.add(keys, vectors)
        return out
