"""The dense dimension with documents' passages: a memory scores the cosine of its best passage, and says which.

Wraps the store's vector search: candidates come from the memory vectors (a document's holds its beginning) and from
an exact scan of the user's passage vectors (one matrix per user, read again when the store's passage token moves);
each candidate's dense score is the larger of its memory vector's and its best passage's cosine. A store without the
``PassageIndex`` capability is searched as before, one vector per memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

import numpy as np

from memlane.embedding.base import Vectors
from memlane.models import Filters, Passage
from memlane.store.indexes import CandidateIndex, VectorIndex
from memlane.store.passages import PassageIndex, PassageMatrix

#: Users whose passage matrices one process keeps (least recently searched leave first).
HELD_USERS: Final = 64


class PassageDense:
    """``vector_search`` and ``vector_scores`` of a store, with documents scored by their best passage."""

    def __init__(self, store: VectorIndex, candidates: CandidateIndex) -> None:
        self._store = store
        self._candidates = candidates
        self._passages = store if isinstance(store, PassageIndex) else None
        self._held: OrderedDict[str, PassageMatrix] = OrderedDict()
        self._lock = threading.Lock()
        self._last = threading.local()  # this thread's best passage per memory in its last search

    @property
    def supported(self) -> bool:
        """Whether the store keeps passages (else every memory has one vector)."""
        return self._passages is not None

    def _matrix(self, user_id: str) -> PassageMatrix | None:
        if self._passages is None:
            return None
        version = self._passages.passage_version(user_id)
        with self._lock:
            held = self._held.get(user_id)
            if held is not None and held.version == version:
                self._held.move_to_end(user_id)
                return held if held.ids else None
        if version == 0 and held is None:  # never held a passage
            return None
        matrix = self._passages.passage_matrix(user_id)
        with self._lock:
            self._held[user_id] = matrix
            self._held.move_to_end(user_id)
            while len(self._held) > HELD_USERS:
                self._held.popitem(last=False)
        return matrix if matrix.ids else None

    def forget(self, user_id: str | None = None) -> None:
        """Drop the held matrices (of one user, or all)."""
        with self._lock:
            if user_id is None:
                self._held.clear()
            else:
                self._held.pop(user_id, None)

    def _best(self, matrix: PassageMatrix, query: Vectors) -> tuple[np.ndarray, np.ndarray]:
        """Per document (``matrix.firsts`` order): the best passage's cosine and its row."""
        sims = matrix.vectors @ np.asarray(query, dtype=np.float32).reshape(-1)
        best = np.maximum.reduceat(sims, matrix.firsts)
        # the first row of each group holding its maximum: rows are grouped in order, so the first of each run
        at = np.flatnonzero(sims >= np.repeat(best, matrix.counts))
        groups = np.repeat(np.arange(len(matrix.firsts)), matrix.counts)[at]
        starts = np.ones(len(at), dtype=bool)
        starts[1:] = groups[1:] != groups[:-1]
        return best, at[starts]

    def search(self, user_id: str, query: Vectors, limit: int, filters: Filters) -> dict[str, float]:
        """The ``limit`` best memories by dense score (passages included) that pass ``filters``."""
        found = dict(self._store.vector_search(user_id, query, limit, filters))
        self._last.best = {}
        matrix = self._matrix(user_id)
        self._last.matrix = (user_id, matrix)  # this search's later scores use it, not another version check
        if matrix is None:
            return found
        best, rows = self._best(matrix, query)
        memories = matrix.memories
        order = np.argsort(-best, kind="stable")[:limit]
        nominated = [memories[int(g)] for g in order if memories[int(g)] not in found]
        allowed = self._candidates.matching(user_id, nominated, filters) if nominated else set()
        groups = [int(g) for g in order if memories[int(g)] in allowed]
        groups += [g for g in (matrix.group_of.get(mid) for mid in found) if g is not None]
        chosen: dict[str, Passage] = {}
        for g in groups:
            chosen[memories[g]] = _passage(matrix, int(rows[g]), g, float(best[g]))
        self._last.best = chosen
        for mid, passage in chosen.items():
            found[mid] = max(found.get(mid, -1.0), passage.score)
        if len(found) > limit:
            kept = sorted(found, key=lambda k: -found[k])[:limit]
            found = {k: found[k] for k in kept}
        return found

    def scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        """The dense score of each of ``memory_ids`` (passages included)."""
        found = self._store.vector_scores(user_id, query, memory_ids)
        held: tuple[str, PassageMatrix | None] | None = getattr(self._last, "matrix", None)
        matrix = held[1] if held is not None and held[0] == user_id else self._matrix(user_id)
        if matrix is None or not memory_ids:
            return found
        groups = [g for g in (matrix.group_of.get(mid) for mid in memory_ids) if g is not None]
        if not groups:
            return found
        chosen: dict[str, Passage] = getattr(self._last, "best", {})
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        for g in groups:
            first, n = int(matrix.firsts[g]), int(matrix.counts[g])
            sims = matrix.vectors[first : first + n] @ q
            r = first + int(np.argmax(sims))
            passage = _passage(matrix, r, g, float(sims[r - first]))
            mid = matrix.memories[g]
            chosen[mid] = passage
            found[mid] = max(found.get(mid, -1.0), passage.score)
        self._last.best = chosen
        return found

    def passage(self, memory_id: str) -> Passage | None:
        """The passage that gave ``memory_id`` its dense score in this thread's last search (None: not a document
        with passages, or not scored on the dense dimension).
        """
        best: dict[str, Passage] = getattr(self._last, "best", {})
        return best.get(memory_id)


def _passage(matrix: PassageMatrix, row: int, group: int, score: float) -> Passage:
    return Passage(
        index=int(matrix.ordinals[row]),
        count=int(matrix.counts[group]),
        start=int(matrix.starts[row]),
        end=int(matrix.ends[row]),
        score=score,
    )
