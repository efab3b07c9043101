"""The context dimension: a memory scores by how well the turns around it in its session answer the query."""

from __future__ import annotations

from collections.abc import Mapping


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
    at = {pos: mid for mid, pos in where.items()}
    out: dict[str, float] = {}
    for mid, (session, position) in where.items():
        best = 0.0
        for d in range(1, width + 1):
            factor = d**-decay
            for p in (position - d, position + d):
                other = at.get((session, p))
                if other is not None:
                    best = max(best, base.get(other, 0.0) * factor)
        out[mid] = best
    return out


def session_scores(
    base: Mapping[str, float], where: Mapping[str, tuple[str | None, int]], top: int = 3
) -> dict[str, float]:
    """For each memory in ``where``, the mean of the ``top`` best ``base`` scores in its session.

    A memory in a session that is about the query as a whole ranks above an equally similar stray one.
    """
    by_session: dict[str | None, list[float]] = {}
    for mid, (session, _) in where.items():
        by_session.setdefault(session, []).append(base.get(mid, 0.0))
    strength = {s: sum(sorted(v, reverse=True)[:top]) / min(top, len(v)) for s, v in by_session.items()}
    return {mid: strength[session] for mid, (session, _) in where.items()}
