"""``ExactVectors``: keys and a contiguous float32 matrix, searched exactly.

Appends are amortised O(1) (a capacity-doubling buffer); a removal moves the last row into the freed slot, so
every write is O(dim), never O(n). Not thread-safe on its own: ``VectorIndex`` holds the lock.

A search of a large matrix reads a float16 copy first: one pass over the whole matrix is a read of memory (15 MB
of float32 at 10k x 384, cold in the cache by the time the next search comes), and half the bytes is about half the
time. The half-precision scores only pre-select: every item whose float16 score is within twice the proven error
bound of the k-th best is scored again in float32, and the k best of those are exactly the k best of the float32
search (same scores, same order, ties by key). The bound is checked on every pre-selected item; a kernel that breaks
it makes the search fall back to the float32 pass.
"""

from __future__ import annotations

import numkong
import numpy as np

from memlane.store.ann.types import F32, I64

#: Below this many vectors the float32 matrix is small enough to stay in the cache: one product, no pre-selection.
HALF_FROM = 4096
#: |float16 score - float32 score| <= HALF_ERROR x |q| x max row norm: each product is off by at most
#: (1 + 2^-11)^2 - 1 (both factors rounded to float16), the float32 sum of 384-4096 terms by far less than the
#: rest of the margin, and the sum of |q_i x_i| is at most |q| |x| (Cauchy-Schwarz). 1e-3 would hold; 2e-3 is slack.
HALF_ERROR = 2e-3


def top_positions(scores: F32, k: int, keys: I64) -> I64:
    """Positions of the ``k`` largest scores, best first; equal scores by key (``keys[i]`` is position i's key),
    so the order never depends on where a vector happens to sit (insertion order, a removal's swap, a reload).
    """
    if k <= 0 or scores.size == 0:
        return np.empty(0, dtype=np.int64)
    if k < scores.size:
        kth = np.partition(-scores, k - 1)[k - 1]
        candidates = np.flatnonzero(-scores <= kth)  # the k best and everything tied with the last of them
    else:
        candidates = np.arange(scores.size)
    order = np.lexsort((keys[candidates], -scores[candidates]))
    return candidates[order[:k]].astype(np.int64)


class ExactVectors:
    """A key → row map over a growable float32 matrix."""

    def __init__(self, dim: int, keys: I64 | None = None, vectors: F32 | None = None) -> None:
        n = 0 if keys is None else len(keys)
        self.dim = dim
        self._buf = np.empty((max(n, 64), dim), dtype=np.float32)
        self._half = np.empty((max(n, 64), dim), dtype=np.float16)  # the float16 copy that pre-selects
        self._norm = 0.0  # at least the largest row norm ever held (removals never lower it: the bound stays safe)
        self._keys = np.empty(max(n, 64), dtype=np.int64)
        self._n = 0
        self._pos: dict[int, int] = {}
        if keys is not None and vectors is not None and n:
            self.add(keys, vectors)

    def __len__(self) -> int:
        return self._n

    def __contains__(self, key: object) -> bool:
        return key in self._pos

    @property
    def matrix(self) -> F32:
        return self._buf[: self._n]

    @property
    def keys(self) -> I64:
        return self._keys[: self._n]

    def _grow(self, need: int) -> None:
        if need <= self._buf.shape[0]:
            return
        cap = max(need, 2 * self._buf.shape[0])
        buf = np.empty((cap, self.dim), dtype=np.float32)
        buf[: self._n] = self._buf[: self._n]
        half = np.empty((cap, self.dim), dtype=np.float16)
        half[: self._n] = self._half[: self._n]
        keys = np.empty(cap, dtype=np.int64)
        keys[: self._n] = self._keys[: self._n]
        self._buf, self._half, self._keys = buf, half, keys

    def add(self, keys: I64, vectors: F32) -> None:
        """Insert or replace: a key already held gets its row overwritten."""
        if len(keys):
            self._norm = max(self._norm, float(np.linalg.norm(vectors, axis=1).max()))
        fresh_rows: list[int] = []
        for i, key in enumerate(keys.tolist()):
            at = self._pos.get(key)
            if at is None:
                fresh_rows.append(i)
            else:
                self._buf[at] = vectors[i]
                self._half[at] = vectors[i]
        if not fresh_rows:
            return
        fresh = np.asarray(fresh_rows, dtype=np.int64)
        start = self._n
        self._grow(start + len(fresh))
        self._buf[start : start + len(fresh)] = vectors[fresh]
        self._half[start : start + len(fresh)] = vectors[fresh]
        self._keys[start : start + len(fresh)] = keys[fresh]
        for j, key in enumerate(keys[fresh].tolist()):
            self._pos[key] = start + j
        self._n = start + len(fresh)

    def remove(self, keys: I64) -> int:
        """Remove the keys held (others are ignored); how many were removed."""
        removed = 0
        for key in keys.tolist():
            at = self._pos.pop(key, None)
            if at is None:
                continue
            last = self._n - 1
            if at != last:
                moved = int(self._keys[last])
                self._buf[at] = self._buf[last]
                self._half[at] = self._half[last]
                self._keys[at] = moved
                self._pos[moved] = at
            self._n = last
            removed += 1
        return removed

    def positions(self, keys: I64) -> I64:
        """Rows of the keys held, in the order given (keys not held are skipped)."""
        pos = self._pos
        return np.fromiter((pos[k] for k in keys.tolist() if k in pos), dtype=np.int64)

    def search(self, query: F32, k: int) -> tuple[I64, F32]:
        """The ``k`` best keys by inner product and their scores (exactly those of the float32 product)."""
        if self._n >= HALF_FROM and 0 < k < self._n // 4:
            found = self._preselect(query, k)
            if found is not None:
                rows, scores = found
                order = top_positions(scores, k, self._keys[rows])
                return self._keys[rows[order]], scores[order]
        scores = self.matrix @ query
        order = top_positions(scores, k, self.keys)
        return self.keys[order], scores[order]

    def _preselect(self, query: F32, k: int) -> tuple[I64, F32] | None:
        """The rows that may hold the ``k`` best by float32 score, from the float16 copy, with their float32 scores;
        ``None`` when the float16 scores break the error bound (the caller then scores the whole float32 matrix).

        The float32 scores come from einsum, not BLAS: its sum runs the same way for every row, so two equal vectors
        get equal scores and tie by key (BLAS's kernels sum a row differently by where it falls in a block of rows).
        """
        q16 = query.astype(np.float16)
        rough = np.asarray(numkong.cdist(q16[None, :], self._half[: self._n], "dot"), dtype=np.float64).reshape(-1)
        if not np.isfinite(rough).all():
            return None
        margin = HALF_ERROR * float(np.linalg.norm(query)) * self._norm
        kth = float(np.partition(rough, self._n - k)[self._n - k])
        rows = np.flatnonzero(rough >= kth - 2 * margin)
        exact = np.einsum("ij,j->i", self._buf[rows], query)
        if float(np.abs(exact - rough[rows]).max()) > margin:
            return None
        return rows.astype(np.int64), exact

    def search_rows(self, query: F32, rows: I64, k: int) -> tuple[I64, F32]:
        """The ``k`` best among the given rows."""
        scores = self._buf[rows] @ query
        order = top_positions(scores, k, self._keys[rows])
        return self._keys[rows[order]], scores[order]
