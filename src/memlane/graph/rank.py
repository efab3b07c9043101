"""Personalised PageRank over a small weighted undirected graph, by power iteration in numpy (a pure function).

Hand-written rather than taken from scipy or networkx: neither is a base dependency, the subgraphs a search
builds hold a few thousand edges at most, and the whole computation is three ``bincount`` calls per step.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

N = TypeVar("N", bound=Hashable)


@dataclass(frozen=True)
class Ranked(Generic[N]):
    """The stationary mass of each node, and the share of it that arrived over edges (not by restart)."""

    mass: dict[N, float]
    received: dict[N, float]


def personalised_pagerank(
    edges: Sequence[tuple[N, N, float]],
    seeds: Mapping[N, float],
    *,
    restart: float = 0.5,
    iterations: int = 50,
    tolerance: float = 1e-7,
) -> Ranked[N]:
    """Personalised PageRank of every node of an undirected weighted graph, restarting at ``seeds``.

    A walker at a node moves to a neighbour with probability proportional to the edge weight, or with probability
    ``restart`` jumps back to a seed (chosen by the seeds' weights, normalised). A node without edges sends its
    mass back to the seeds. Seeds absent from ``edges`` are still nodes. Non-positive weights are ignored.
    Returns masses summing to 1 (empty when there are no positive seeds).
    """
    if not 0.0 < restart <= 1.0:
        raise ValueError("restart must be within (0, 1]")
    positive = {n: w for n, w in seeds.items() if w > 0}
    if not positive:
        return Ranked({}, {})
    index: dict[N, int] = {}
    for a, b, _ in edges:
        index.setdefault(a, len(index))
        index.setdefault(b, len(index))
    for n in positive:
        index.setdefault(n, len(index))
    size = len(index)
    kept = [(index[a], index[b], w) for a, b, w in edges if w > 0 and a != b]
    pairs = np.array([(a, b) for a, b, _ in kept], dtype=np.int64).reshape(-1, 2)
    src = np.concatenate([pairs[:, 0], pairs[:, 1]])
    dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
    weight = np.tile(np.array([w for *_, w in kept], dtype=np.float64), 2)
    out = np.bincount(src, weights=weight, minlength=size)
    share = weight / out[src] if len(src) else weight
    dangling = out <= 0
    s = np.zeros(size)
    for n, w in positive.items():
        s[index[n]] = w
    s /= s.sum()
    x = s.copy()
    for _ in range(iterations):
        moved = np.bincount(dst, weights=x[src] * share, minlength=size) if len(src) else np.zeros(size)
        nxt = (1.0 - restart) * (moved + x[dangling].sum() * s) + restart * s
        if float(np.abs(nxt - x).sum()) < tolerance:
            x = nxt
            break
        x = nxt
    received = np.maximum(x - restart * s, 0.0)
    nodes = list(index)
    return Ranked(
        {n: float(x[i]) for n, i in zip(nodes, range(size), strict=True)},
        {n: float(received[i]) for n, i in zip(nodes, range(size), strict=True)},
    )
