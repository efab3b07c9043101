"""``HnswVectors``: a usearch HNSW graph over inner product, with upserts, removals, lookups and files.

usearch was chosen by measurement (``docs/ann.md``): a prebuilt wheel, one file per index, true removal, recall
≥ 0.98 at 1M on memlane's vectors with single-query latency well under a millisecond. Not thread-safe on its own.

A graph search is a walk of random reads, one vector per step: with the vectors in bf16 (``graph_dtype``, the
default) each step reads half the bytes: at 100k a search took 1.5-1.9 ms instead of 2.7-2.9 (``docs/ann.md``). Those
scores are rounded to 8 bits of mantissa, too coarse to rank memlane's crowded scores by, so the float32 rows are
kept beside the graph (``ExactVectors`` without its int8 copy): the graph is asked for ``graph_oversample`` times the
candidates wanted, they are rescored in float32 and the best are returned, with exact scores, as a float32 graph
returns them; lookups (``vectors_of``) read the float32 rows too. A float32 graph (``graph_dtype="f32"``) keeps no
copy and reads its vectors back from the graph.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from memlane.errors import StoreError
from memlane.store.ann.exact import ExactVectors
from memlane.store.ann.files import load_exact, save_exact
from memlane.store.ann.types import F32, I64, IndexSettings
from memlane.telemetry import timed

#: Batches at least this large are inserted on every core; smaller ones on the calling thread.
PARALLEL_ADD = 64
#: The graph size up to which ``expansion_search`` is the beam as it is (see ``HnswVectors.beam``).
GROWS_FROM = 100_000


def _usearch() -> Any:
    try:
        from usearch import index as usearch_index
    except ImportError as e:  # pragma: no cover - usearch is a base dependency
        raise StoreError("the vector index needs usearch; reinstall memlane") from e
    return usearch_index


class HnswVectors:
    """An HNSW graph keyed by the owner's integer keys (stored as unsigned 64-bit)."""

    def __init__(
        self, dim: int, settings: IndexSettings, *, index: Any = None, rows: ExactVectors | None = None
    ) -> None:
        self.dim = dim
        self.settings = settings
        if index is None:
            index = _usearch().Index(
                ndim=dim,
                metric="ip",
                dtype=settings.graph_dtype,
                connectivity=settings.connectivity,
                expansion_add=settings.expansion_add,
                expansion_search=settings.expansion_search,
            )
        self._index = index
        #: The float32 rows a compact graph is rescored from (``None``: a float32 graph, which holds them itself).
        self._rows = (
            None if settings.graph_dtype == "f32" else (rows if rows is not None else ExactVectors(dim, coded=False))
        )
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
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._index.add(ukeys, vectors, threads=threads)
        if self._rows is not None:
            self._rows.add(keys, vectors, code=False)

    def remove(self, keys: I64) -> int:
        """Remove the keys held (others are ignored); how many were removed."""
        if not len(keys):
            return 0
        ukeys = keys.astype(np.uint64)
        held = np.asarray(self._index.contains(ukeys), dtype=bool).reshape(-1)
        if not held.any():
            return 0
        self._index.remove(ukeys[held])
        if self._rows is not None:
            self._rows.remove(keys[held])
        self.tombstones += int(held.sum())
        return int(held.sum())

    def keys(self) -> I64:
        """Every key held."""
        return np.asarray(self._index.keys, dtype=np.int64)

    def relay(self) -> None:
        """Lay the graph out again as a loaded one is: serialised to bytes in memory and read back.

        A graph grown by inserts keeps each node where the allocator put it, scattered over a heap that a bulk
        ingest has filled with other objects; a graph read from a file holds its nodes in one block, and a search
        (random reads, one node a step) runs faster through it. Called once a background build has inserted
        everything, before it replays the writes queued meanwhile; nothing but the layout changes. No file is
        written: a temporary file would be a copy of the vectors outside the index's own generation files.
        """
        data = self._index.save()
        fresh = _usearch().Index(
            ndim=self.dim,
            metric="ip",
            dtype=self.settings.graph_dtype,
            connectivity=self.settings.connectivity,
            expansion_add=self.settings.expansion_add,
            expansion_search=self.settings.expansion_search,
        )
        self._index.reset()  # its memory goes back before the new graph takes as much again
        fresh.load(data)
        del data
        self._index = fresh

    def compacted(self) -> HnswVectors:
        """A new graph over the live vectors only, with no bytes of removed or replaced ones left anywhere."""
        present, vectors = self.vectors_of(self.keys())
        return HnswVectors.build(self.dim, self.settings, present, vectors)

    def search(self, query: F32, count: int) -> tuple[I64, F32]:
        """Up to ``count`` approximate nearest keys and their inner products, best first."""
        if count <= 0 or not len(self):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        wanted = count
        if self._rows is not None:
            count = min(len(self), math.ceil(count * self.settings.graph_oversample))
        self._index.expansion_search = max(count, self.beam())
        found = self._index.search(query, count, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64)
        if self._rows is not None:  # rescored in float32: the graph's own scores are bf16 or f16 products
            return self._rows.search_rows(query, self._rows.positions(keys), wanted)
        scores = (1.0 - np.asarray(found.distances, dtype=np.float32)).astype(np.float32)
        return keys, scores

    def beam(self) -> int:
        """The ef of a search of this graph: ``expansion_search`` up to ``GROWS_FROM`` vectors, then widened as
        ``(vectors / GROWS_FROM) ** expansion_growth``: on memlane's vectors a graph's recall falls with its size
        at a fixed ef (``docs/ann.md``: at 1M, ef 512 found 0.924 of the exact top 10, 2,560 found 0.984).
        """
        base, n = self.settings.expansion_search, len(self)
        if n <= GROWS_FROM or self.settings.expansion_growth <= 0:
            return base
        widen: float = (n / GROWS_FROM) ** self.settings.expansion_growth
        return math.ceil(base * widen)

    def vectors_of(self, keys: I64) -> tuple[I64, F32]:
        """The keys held among ``keys`` and their stored vectors, one row each."""
        if not len(keys):
            return keys, np.empty((0, self.dim), dtype=np.float32)
        if self._rows is not None:
            rows = self._rows.positions(keys)
            return self._rows.keys[rows], self._rows.matrix[rows]
        ukeys = keys.astype(np.uint64)
        held = np.asarray(self._index.contains(ukeys), dtype=bool).reshape(-1)
        present = keys[held]
        if not len(present):
            return present, np.empty((0, self.dim), dtype=np.float32)
        got = self._index.get(present.astype(np.uint64), dtype=np.float32)
        return present, np.asarray(got, dtype=np.float32).reshape(len(present), self.dim)

    @staticmethod
    def rows_path(path: Path) -> Path:
        """Where ``save(path)`` writes the float32 rows of a compact graph."""
        return path.with_name(f"{path.stem}.rows.npy")

    def save(self, path: Path) -> Path | None:
        """Write the graph to ``path`` and, for a compact graph, its float32 rows to ``rows_path(path)`` (returned)."""
        self._index.save(str(path))
        if self._rows is None:
            return None
        rows = self.rows_path(path)
        save_exact(rows, self._rows.keys, self._rows.matrix)
        return rows

    @classmethod
    def load(cls, path: Path, dim: int, settings: IndexSettings, rows: Path | None = None) -> HnswVectors:
        """The graph saved at ``path`` (its own header must agree with ``dim``, its vectors' type with ``settings``)
        and, for a compact graph, its float32 rows saved at ``rows`` (the same keys).
        """
        try:
            index = _usearch().Index.restore(str(path))
        except (RuntimeError, ValueError, OSError) as e:
            raise StoreError(f"cannot read the vector index {path}: {e}") from e
        if index is None or int(index.ndim) != dim:
            raise StoreError(f"the vector index {path} is not a {dim}-dimensional index")
        saved = str(index.dtype).rsplit(".", 1)[-1].lower()
        if saved != settings.graph_dtype:
            raise StoreError(f"the vector index {path} holds {saved} vectors, not {settings.graph_dtype}")
        copy = None
        if settings.graph_dtype != "f32":
            if rows is None:
                raise StoreError(f"the vector index {path} has no file of float32 rows")
            keys, vectors = load_exact(rows, dim)
            if len(keys) != len(index) or not np.all(index.contains(keys.astype(np.uint64))):
                raise StoreError(f"the float32 rows in {rows} are not those of the graph {path}")
            copy = ExactVectors(dim, keys, vectors, coded=False, adopt=True)
        index.expansion_search = settings.expansion_search
        index.expansion_add = settings.expansion_add
        return cls(dim, settings, index=index, rows=copy)

    @classmethod
    @timed("index_build")  # telemetry
    def build(cls, dim: int, settings: IndexSettings, keys: I64, vectors: F32) -> HnswVectors:
        """A graph over the given vectors (one batch insert)."""
        out = cls(dim, settings)
        if len(keys):
            out.add(keys, vectors)
        return out
