"""The context dimension: a memory scores by how well the turns around it in its session answer the query.

The context score is computed over arrays (one row per memory) instead of a walk over each memory's neighbours:
a search's pool holds hundreds of memories, and this runs on every search.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt


def _arrays(
    base: Mapping[str, float], where: Mapping[str, tuple[str | None, int]]
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The memories of ``where`` with their session codes, positions and base scores (0 when absent)."""
    mids = list(where)
    n = len(mids)
    codes: dict[str | None, int] = {}
    session = np.fromiter((codes.setdefault(s, len(codes)) for s, _ in where.values()), dtype=np.int64, count=n)
    position = np.fromiter((p for _, p in where.values()), dtype=np.int64, count=n)
    score = np.fromiter(map(base.get, mids, [0.0] * n), dtype=np.float64, count=n)
    return mids, session, position, score


def context_scores(
    base: Mapping[str, float], where: Mapping[str, tuple[str | None, int]], width: int, decay: float = 0.5
) -> dict[str, float]:
    """For each memory in ``where``, the best ``base`` score among its neighbours, times ``distance ** -decay``.

    ``where`` gives each memory's (session, position); neighbours are the memories of the same session within
    ``width`` positions. A neighbour without a base score counts as 0. The memory's own score is not included:
    this dimension says "the turn next to this one answers the query", as when a question is answered in the
    following turn.
    """
    if width <= 0:
        return {}
    if not where:
        return {}
    mids, session, position, score = _arrays(base, where)
    # One integer key per (session, position), spaced so that no offset within ``width`` reaches another session.
    low = int(position.min())
    stride = int(position.max()) - low + 2 * width + 1
    key = session * stride + (position - low)
    # Several memories at one place: the last one listed holds it (as a dict keyed by place would).
    last = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
    held_key, held_score = key[last], score[last]  # sorted by key (np.unique sorts)
    best = np.zeros(len(mids), dtype=np.float64)
    for d in range(1, width + 1):
        factor = d**-decay
        for target in (key - d, key + d):
            at = np.minimum(np.searchsorted(held_key, target), len(held_key) - 1)
            found = held_key[at] == target
            best = np.maximum(best, np.where(found, held_score[at] * factor, 0.0))
    return dict(zip(mids, best.tolist(), strict=True))


def session_scores(
    base: Mapping[str, float], where: Mapping[str, tuple[str | None, int]], top: int = 3
) -> dict[str, float]:
    """For each memory in ``where``, the mean of the ``top`` best ``base`` scores in its session.

    A memory in a session that is about the query as a whole ranks above an equally similar stray one.
    """
    if not where:
        return {}
    mids, session, _, score = _arrays(base, where)
    order = np.lexsort((-score, session))  # by session, best score first within each
    ordered = score[order]
    grouped = session[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    counts = np.diff(np.r_[starts, len(order)])
    # The best ``top`` of each session added best first, as ``sum(sorted(...)[:top])`` adds them.
    total = np.zeros(len(starts), dtype=np.float64)
    for j in range(top):
        total = total + np.where(counts > j, ordered[np.minimum(starts + j, len(order) - 1)], 0.0)
    strength = total / np.minimum(counts, top)
    out = np.empty(len(order), dtype=np.float64)
    out[order] = np.repeat(strength, counts)
    return dict(zip(mids, out.tolist(), strict=True))
