"""An in-process cache of each user's vectors as one numpy matrix, kept in step with the SQLite rows.

SQLite holds the vectors (the source of truth, written in the same transaction as the rows). Exact
search over a contiguous float32 matrix is a single BLAS call: at 10k memories it takes well under a
millisecond and has perfect recall, which no approximate index beats at that size. Each user's
matrix is tagged with the ``scope_versions`` counter that every write of that user bumps, so a
write by another connection or process is seen at the next search.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memlane.embedding.base import Vectors


class UserMatrix:
    """The vectors of one user at a scope version: row keys, memory ids and an (n, dim) matrix.

    Appends are amortised O(1) (a capacity-doubling buffer); readers see ``matrix``, a view of the
    filled rows, so a search running during an append reads a consistent prefix.
    """

    def __init__(self, version: int, pks: Sequence[int], ids: Sequence[str], matrix: Vectors) -> None:
        self.version = version
        n, dim = matrix.shape
        self._buf = np.empty((max(n, 16), dim), dtype=np.float32)
        self._buf[:n] = matrix
        self._pks = np.empty(max(n, 16), dtype=np.int64)
        self._pks[:n] = np.asarray(pks, dtype=np.int64)
        self.ids: list[str] = list(ids)
        self._n = n
        self._pos = {int(pk): i for i, pk in enumerate(self._pks[:n])}
        self._id_pos = {mid: i for i, mid in enumerate(self.ids)}

    @property
    def matrix(self) -> Vectors:
        return self._buf[: self._n]

    @property
    def pks(self) -> npt.NDArray[np.int64]:
        return self._pks[: self._n]

    def positions(self, pks: Sequence[int]) -> npt.NDArray[np.int64]:
        """Row positions of the given keys (keys not held are skipped)."""
        return np.fromiter((self._pos[p] for p in pks if p in self._pos), dtype=np.int64)

    def id_positions(self, memory_ids: Sequence[str]) -> list[int]:
        """Row positions of the given memory ids (ids not held are skipped)."""
        return [self._id_pos[m] for m in memory_ids if m in self._id_pos]

    def append(self, pks: Sequence[int], ids: Sequence[str], vectors: Vectors) -> None:
        """Add rows in place, growing the buffer geometrically."""
        k = len(pks)
        need = self._n + k
        if need > self._buf.shape[0]:
            cap = max(need, 2 * self._buf.shape[0])
            buf = np.empty((cap, self._buf.shape[1]), dtype=np.float32)
            buf[: self._n] = self._buf[: self._n]
            keys = np.empty(cap, dtype=np.int64)
            keys[: self._n] = self._pks[: self._n]
            self._buf, self._pks = buf, keys
        self._buf[self._n : need] = vectors
        self._pks[self._n : need] = np.asarray(pks, dtype=np.int64)
        for i, (pk, mid) in enumerate(zip(pks, ids, strict=True)):
            self._pos[int(pk)] = self._n + i
            self._id_pos[mid] = self._n + i
        self.ids.extend(ids)
        self._n = need

    def without(self, pks: Sequence[int]) -> UserMatrix:
        """A new matrix with the given keys' rows removed."""
        keep = np.ones(self._n, dtype=bool)
        keep[self.positions(pks)] = False
        ids = [i for i, k in zip(self.ids, keep, strict=True) if k]
        return UserMatrix(self.version, self.pks[keep].tolist(), ids, self.matrix[keep])


class MatrixCache:
    """Thread-safe map from user id to that user's ``UserMatrix``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[str, UserMatrix] = {}

    def get(self, user_id: str, version: int) -> UserMatrix | None:
        """The cached matrix if it is at ``version``."""
        with self._lock:
            held = self._users.get(user_id)
            return held if held is not None and held.version == version else None

    def put(self, user_id: str, matrix: UserMatrix) -> None:
        with self._lock:
            self._users[user_id] = matrix

    def advance(
        self,
        user_id: str,
        old_version: int,
        new_version: int,
        *,
        add: tuple[Sequence[int], Sequence[str], Vectors] | None = None,
        remove: Sequence[int] = (),
    ) -> None:
        """Apply a committed write to the cached matrix if it was current, else drop it."""
        with self._lock:
            held = self._users.get(user_id)
            if held is None:
                return
            if held.version != old_version:
                del self._users[user_id]
                return
            updated = held.without(remove) if remove else held
            if add is not None and len(add[0]):
                updated.append(*add)
            updated.version = new_version
            self._users[user_id] = updated

    def drop(self, user_id: str | None = None) -> None:
        with self._lock:
            if user_id is None:
                self._users.clear()
            else:
                self._users.pop(user_id, None)


def top_k(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.int64]:
    """Indices of the ``k`` largest scores, best first."""
    if k <= 0 or scores.size == 0:
        return np.empty(0, dtype=np.int64)
    if k >= scores.size:
        return np.argsort(-scores, kind="stable").astype(np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")].astype(np.int64)
