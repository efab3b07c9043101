"""``ExactVectors``: keys and a contiguous float32 matrix, searched exactly.

Appends are amortised O(1) (a capacity-doubling buffer); a removal moves the last row into the freed slot, so
every write is O(dim), never O(n). Not thread-safe on its own: ``VectorIndex`` holds the lock.

A search of a large matrix reads an int8 copy first: one pass over the whole matrix is a read of memory (15 MB of
float32 at 10k x 384, cold in the cache by the time the next search comes), and a quarter of the bytes, through
integer kernels, is about a third of the time. Each row is stored as ``centre + scale x codes + residual``: the
centre (the mean vector, which the static embedder's strongly anisotropic vectors sit far from) is common to every
row and so changes no ranking, and subtracting it makes the codes fine enough to rank by. Each row keeps the norm of
its residual, so every coded score has a proven error bound (Cauchy-Schwarz on the two rounding residuals, plus the
float32 sum's own error); the rows whose interval can reach the k-th best lower bound are scored again in float32,
and the k best of those are exactly the k best of the float32 search (same scores, same order, ties by key). The
integer products are checked again in numpy on every pre-selected row; a kernel that gets one wrong makes the
search fall back to the float32 pass.
"""

from __future__ import annotations

import numkong
import numpy as np

from memlane.store.ann.types import F32, I64

#: Below this many vectors the float32 matrix is small enough to stay in the cache: one product, no pre-selection.
CODED_FROM = 4096
#: Unit roundoff of float32, doubled: the bound on one rounding (2^-24) with room for the sum's order.
_ROUND = 2.0**-23
#: The first pass of a pre-selection scores this many times ``k`` rows in float32 (those of best int8 estimate).
FIRST_PASS = 2
#: Rows coded at once.
_BLOCK = 1024


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
    """A key → row map over a growable float32 matrix, with the int8 copy that pre-selects.

    ``coded=False`` keeps no int8 copy at all (the float32 rows a compact HNSW graph is rescored from, never
    searched whole): every search is the plain float32 product. ``adopt=True`` takes the given arrays as its own
    buffers, not copying them (arrays just read from a file, which nobody else holds).
    """

    def __init__(
        self,
        dim: int,
        keys: I64 | None = None,
        vectors: F32 | None = None,
        *,
        coded: bool = True,
        adopt: bool = False,
    ) -> None:
        n = 0 if keys is None else len(keys)
        cap = max(n, 64)
        coded_cap = cap if coded else 0
        self.dim = dim
        self.coded = coded
        self._buf = np.empty((cap, dim), dtype=np.float32)
        self._keys = np.empty(cap, dtype=np.int64)
        if adopt and keys is not None and vectors is not None and n:
            owned = (vectors.dtype == np.float32, keys.dtype == np.int64, vectors.shape == (n, dim))
            if all(owned) and vectors.flags.c_contiguous and vectors.flags.writeable and keys.flags.writeable:
                self._buf, self._keys = vectors, keys  # (already in place: add copies nothing)
        self._codes = np.empty((coded_cap, dim), dtype=np.int8)  # round((row - centre) / scale)
        self._scale = np.empty(coded_cap, dtype=np.float64)
        self._coded = np.empty(coded_cap, dtype=np.float64)  # |scale x codes|
        self._residual = np.empty(coded_cap, dtype=np.float64)  # |row - centre - scale x codes|
        self._centre = np.zeros(dim, dtype=np.float32)
        self._centred_at = 0  # rows held when the centre was last set (it is set again each time they double)
        self._norm = 0.0  # at least the largest row norm ever held (removals never lower it: the bound stays safe)
        self._n = 0
        self._uncoded = not coded  # rows were added with ``code=False`` and ``code_all`` has not run since
        # While uncoded: the rows written since (replaced rows, and every row from ``_fresh_from`` on), which are
        # all ``code_all`` has to code unless the rows held have doubled (then it centres again and codes them all).
        self._pending: set[int] = set()
        self._fresh_from: int | None = None
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
        n = self._n

        def grown(old: np.ndarray) -> np.ndarray:
            new = np.empty((cap, *old.shape[1:]), dtype=old.dtype)
            new[:n] = old[:n]
            return new

        self._buf, self._keys = grown(self._buf), grown(self._keys)
        if self.coded:
            self._codes, self._scale = grown(self._codes), grown(self._scale)
            self._coded, self._residual = grown(self._coded), grown(self._residual)

    def _encode(self, rows: slice | I64) -> None:
        """Code the given rows of the float32 matrix against the current centre (in blocks: the float64 temporaries
        of a whole 50k-row matrix would be 150 MB each).
        """
        if isinstance(rows, slice):
            for start in range(rows.start, rows.stop, _BLOCK):
                self._encode_block(slice(start, min(start + _BLOCK, rows.stop)))
        else:
            for start in range(0, len(rows), _BLOCK):
                self._encode_block(rows[start : start + _BLOCK])

    def _encode_block(self, rows: slice | I64) -> None:
        centred = (self._buf[rows] - self._centre).astype(np.float64)
        scale = np.abs(centred).max(axis=1) / 127.0
        scale[scale == 0] = 1.0  # a row at the centre: codes 0, residual 0
        codes = np.clip(np.rint(centred / scale[:, None]), -127, 127)
        decoded = codes * scale[:, None]
        self._codes[rows] = codes.astype(np.int8)
        self._scale[rows] = scale
        self._coded[rows] = np.linalg.norm(decoded, axis=1)
        self._residual[rows] = np.linalg.norm(centred - decoded, axis=1)

    def _recentre(self, *, due: bool = False) -> bool:
        """Set the centre to the mean row and code every row again (when the rows held have doubled: O(1) a row,
        or when ``due``; never below ``CODED_FROM`` rows); whether it did.
        """
        if self._n >= CODED_FROM and (due or self._n >= 2 * self._centred_at):
            self._centre = self.matrix.mean(axis=0, dtype=np.float64).astype(np.float32)
            self._encode(slice(0, self._n))
            self._centred_at = self._n
            return True
        return False

    def add(self, keys: I64, vectors: F32, *, code: bool = True) -> None:
        """Insert or replace: a key already held gets its row overwritten.

        ``code=False`` (a bulk load) leaves the int8 copy behind: searches read the float32 matrix alone until
        ``code_all`` codes every row once (a rebuild of 1M vectors in batches coded 2.3M rows as it went).
        """
        code = code and self.coded
        if len(keys) and self.coded:
            self._norm = max(self._norm, float(np.linalg.norm(vectors, axis=1).max()))
        first = not self._pos  # a first load (a rebuild, a file read): every key is new, nothing to look up
        fresh_rows: list[int] = []
        replaced: list[int] = []
        for i, key in enumerate(() if first else keys.tolist()):
            at = self._pos.get(key)
            if at is None:
                fresh_rows.append(i)
            else:
                self._buf[at] = vectors[i]
                replaced.append(at)
        self._uncoded = self._uncoded or not code
        if replaced and not self._uncoded:
            self._encode(np.asarray(replaced, dtype=np.int64))
        elif replaced and self.coded:
            self._pending.update(replaced)
        fresh = np.arange(len(keys), dtype=np.int64) if first else np.asarray(fresh_rows, dtype=np.int64)
        if not len(fresh):
            return
        start = self._n
        self._grow(start + len(fresh))
        new_vectors, new_keys = (vectors, keys) if first else (vectors[fresh], keys[fresh])  # (no copy of a whole load)
        if new_vectors is not self._buf:  # (adopted arrays are the buffers already)
            self._buf[start : start + len(fresh)] = new_vectors
        if new_keys is not self._keys:
            self._keys[start : start + len(fresh)] = new_keys
        self._pos.update(zip(new_keys.tolist(), range(start, start + len(fresh)), strict=True))
        self._n = start + len(fresh)
        if self._uncoded:
            if self.coded:  # (after removals the rows appended may start below the first uncoded row)
                self._fresh_from = start if self._fresh_from is None else min(self._fresh_from, start)
        elif not self._recentre():  # (which codes every row, these too)
            self._encode(slice(start, self._n))

    def code_all(self) -> None:
        """After adds with ``code=False``: code the rows written since, against the current centre, or (when the
        rows held have doubled since it was set: a first load, a large replay) centre on the mean row and code every
        row. A write of a few rows never codes the whole matrix again.
        """
        if not self._uncoded or not self.coded:
            return
        self._uncoded = False
        pending, fresh_from = self._pending, self._fresh_from
        self._pending, self._fresh_from = set(), None
        if self._recentre():
            return
        end = self._n if fresh_from is None else min(fresh_from, self._n)
        rows = sorted(p for p in pending if p < end)
        if rows:
            self._encode(np.asarray(rows, dtype=np.int64))
        if end < self._n:
            self._encode(slice(end, self._n))

    def remove(self, keys: I64) -> int:
        """Remove the keys held (others are ignored); how many were removed."""
        removed = 0
        for key in keys.tolist():
            at = self._pos.pop(key, None)
            if at is None:
                continue
            last = self._n - 1
            if self._uncoded and self.coded:  # the row moved keeps its place in what code_all codes
                moved_uncoded = (self._fresh_from is not None and last >= self._fresh_from) or last in self._pending
                self._pending.discard(last)
                if at != last and moved_uncoded:
                    self._pending.add(at)
            if at != last:
                moved = int(self._keys[last])
                coded = (self._codes, self._scale, self._coded, self._residual) if self.coded else ()
                for column in (self._buf, *coded):
                    column[at] = column[last]
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
        if self._n >= CODED_FROM and 0 < k < self._n // 4 and not self._uncoded:
            found = self._preselect(query, k)
            if found is not None:
                rows, scores = found
                order = top_positions(scores, k, self._keys[rows])
                return self._keys[rows[order]], scores[order]
        scores = self.matrix @ query
        order = top_positions(scores, k, self.keys)
        return self.keys[order], scores[order]

    def _preselect(self, query: F32, k: int) -> tuple[I64, F32] | None:
        """The rows that may hold the ``k`` best by float32 score, from the int8 codes, with their float32 scores;
        ``None`` when the query cannot be coded or the integer kernel disagrees with numpy (the caller then scores
        the whole float32 matrix).

        With row = centre + s a + e and query = t b + f (``a``, ``b`` the codes, ``e``, ``f`` the residuals), the
        float32 score is centre.query (the same for every row, so it is left out of the comparison) + s t (a.b) +
        an error of at most |s a| |f| + |e| |query| + the float32 roundings. The float32 scores come from einsum,
        not BLAS: its sum runs the same way for every row, so two equal vectors get equal scores and tie by key.

        Two steps: the ``FIRST_PASS * k`` rows of best rough score are scored in float32 first; the k-th best of those scores
        is a floor under the k-th best of all, and only the other rows whose bound reaches that floor are scored
        too (about half as many rows in all as a floor taken from the bounds alone).
        """
        n = self._n
        wide = query.astype(np.float64)
        step = float(np.abs(wide).max()) / 127.0
        if not np.isfinite(step) or step == 0.0:
            return None
        code = np.clip(np.rint(wide / step), -127, 127)
        query_norm = float(np.linalg.norm(wide))
        query_residual = float(np.linalg.norm(wide - code * step))
        code8 = code.astype(np.int8)
        dots = np.asarray(numkong.cdist(code8[None, :], self._codes[:n], "dot"), dtype=np.float64).reshape(-1)
        rough = dots * self._scale[:n] * step
        sums = _ROUND * query_norm * ((self.dim + 1) * self._norm + float(np.linalg.norm(self._centre)))
        bound = self._coded[:n] * query_residual + self._residual[:n] * query_norm + sums
        m = FIRST_PASS * k
        first = np.argpartition(rough, n - m)[n - m :] if m < n else np.arange(n)
        first_scores = np.einsum("ij,j->i", self._buf[first], query)
        floor = float(np.partition(first_scores, first_scores.size - k)[first_scores.size - k])
        # The floor is a float32 score (centre.query included): taken back to the rough scale with a second
        # allowance for the roundings of that score and of centre.query.
        floor -= float(self._centre.astype(np.float64) @ wide) + sums
        seen = np.zeros(n, dtype=bool)
        seen[first] = True
        more = np.flatnonzero((rough + bound >= floor) & ~seen)
        rows = np.concatenate([first, more])
        # The same integer products through BLAS: each partial sum is an integer below 2^24 (float32) or 2^53
        # (float64), so either is exact, in any order of summation.
        exact_type = np.float32 if 127 * 127 * self.dim < 2**24 else np.float64
        again = self._codes[rows].astype(exact_type) @ code.astype(exact_type)
        if not np.array_equal(again, dots[rows]):
            return None
        exact = np.concatenate([first_scores, np.einsum("ij,j->i", self._buf[more], query)])
        return rows.astype(np.int64), exact

    def search_rows(self, query: F32, rows: I64, k: int) -> tuple[I64, F32]:
        """The ``k`` best among the given rows."""
        scores = self._buf[rows] @ query
        order = top_positions(scores, k, self._keys[rows])
        return self._keys[rows[order]], scores[order]
