"""Score fusion as pure functions: per-dimension raw scores in, ranked items with breakdowns out."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from memlane.models import ScoreBreakdown

K = TypeVar("K", bound=Hashable)
Signals = Mapping[str, Mapping[K, float]]
Normalizer = Literal["minmax", "identity", "max"]
MULTI = "multi_dimension"  # the breakdown entry of the bonus for several strong dimensions at once


@dataclass(frozen=True)
class Fused(Generic[K]):
    """One fused item: its key, final score and each dimension's part."""

    key: K
    score: float
    breakdown: dict[str, ScoreBreakdown] = field(default_factory=dict)


@dataclass(frozen=True)
class FusionSpec:
    """How to combine dimensions: a weighted sum of normalised scores, or reciprocal rank fusion."""

    method: Literal["weighted", "rrf"]
    weights: Mapping[str, float]
    normalizers: Mapping[str, Normalizer] = field(default_factory=dict)
    rrf_k: int = 60
    tie_breaker: str | None = None
    multi_bonus: float = 0.0
    multi_threshold: float = 0.5
    # Demotions (weighted fusion only): an item's total is multiplied by (1 - p x its score in the dimension), e.g.
    # ``validity`` (1.0 for a message whose claim a later memory superseded). They never nominate items.
    penalties: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in ("weighted", "rrf"):
            raise ValueError(f"unknown fusion method {self.method!r}")
        if any(not math.isfinite(w) or w < 0 for w in self.weights.values()):
            raise ValueError("fusion weights must be finite and non-negative")
        if self.rrf_k <= 0:
            raise ValueError("rrf_k must be positive")
        if not math.isfinite(self.multi_bonus) or self.multi_bonus < 0:
            raise ValueError("multi_bonus must be finite and non-negative")
        if any(not 0.0 <= p <= 1.0 for p in self.penalties.values()):
            raise ValueError("penalties must be within [0, 1]")


def minmax(scores: Mapping[K, float]) -> dict[K, float]:
    """Scale scores to [0, 1] by the min and max.

    All-equal scores (one candidate, or a tie of all) carry no evidence for ranking one item over another, and there
    is no range to scale by: each keeps its raw score, clipped to [0, 1], so that a dimension in which nothing
    matched (every BM25 score 0) contributes nothing, and a lone candidate's BM25 of 1e-6 contributes about 1e-6
    instead of the dimension's whole weight.
    """
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return {k: min(max(v, 0.0), 1.0) for k, v in scores.items()}
    span = hi - lo
    return {k: (v - lo) / span for k, v in scores.items()}


def max_scale(scores: Mapping[K, float]) -> dict[K, float]:
    """Divide by the maximum (for non-negative scores such as BM25): keeps a weak best match weak relative to 0."""
    if not scores:
        return {}
    hi = max(scores.values())
    if hi <= 1e-12:
        return dict.fromkeys(scores, 0.0)
    return {k: max(v, 0.0) / hi for k, v in scores.items()}


def normalize(scores: Mapping[K, float], how: Normalizer) -> dict[K, float]:
    """Apply a named normaliser."""
    if how == "minmax":
        return minmax(scores)
    if how == "max":
        return max_scale(scores)
    return dict(scores)


def ranks(scores: Mapping[K, float]) -> dict[K, int]:
    """1-based ranks by descending score; ties are ordered by the key's string form for determinism."""
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))
    return {k: i + 1 for i, (k, _) in enumerate(ordered)}


def _ordered_keys(
    totals: Mapping[K, float], signals: Signals[K], tie_breaker: str | None, limit: int | None
) -> list[K]:
    tie = signals.get(tie_breaker, {}) if tie_breaker else {}
    ordered = sorted(totals, key=lambda k: (-totals[k], -tie.get(k, 0.0), str(k)))
    return ordered if limit is None else ordered[:limit]


def normalized_array(raw: npt.NDArray[np.float64], how: Normalizer) -> npt.NDArray[np.float64]:
    """``normalize`` over an array (the same arithmetic, so the same values)."""
    if not raw.size or how == "identity":
        return raw
    hi = float(raw.max())
    if how == "max":
        return np.maximum(raw, 0.0) / hi if hi > 1e-12 else np.zeros_like(raw)
    lo = float(raw.min())
    if hi - lo <= 1e-12:
        return np.clip(raw, 0.0, 1.0)
    return (raw - lo) / (hi - lo)


def _column_ranks(raw: npt.NDArray[np.float64], name_order: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The 1-based rank ``ranks`` gives each item of one dimension's column: higher scores first, ties by the key's
    string form (``name_order``: each item's place among the pool's keys by string form).
    """
    order = np.lexsort((name_order, -raw))
    out = np.empty(raw.size, dtype=np.int64)
    out[order] = np.arange(1, raw.size + 1)
    return out


def _best(
    totals: npt.NDArray[np.float64], tie: npt.NDArray[np.float64], names: Sequence[str], limit: int | None
) -> list[int]:
    """Positions of the best ``limit`` items by (total, tie-breaker, key's string form), as ``_ordered_keys`` orders.

    The arrays order everything by the numbers; only the items tied with the last one kept are compared by name.
    """
    order = np.lexsort((-tie, -totals))
    n = len(order)
    if limit is not None and limit < n:
        if limit <= 0:
            return []
        last = order[limit - 1]
        same = (totals[order] == totals[last]) & (tie[order] == tie[last])
        cut = limit + int(np.argmin(same[limit:])) if not same[limit:].all() else n
        order = order[:cut]
    total, tie_list = totals.tolist(), tie.tolist()
    ordered = sorted(order.tolist(), key=lambda i: (-total[i], -tie_list[i], names[i]))
    return ordered if limit is None else ordered[:limit]


def weighted_sum(signals: Signals[K], spec: FusionSpec, limit: int | None = None) -> list[Fused[K]]:
    """Sum of weight x normalised score over dimensions; an item absent from a dimension scores 0 there.

    Dimensions of weight 0 are switched off: they neither nominate items nor appear in breakdowns. With ``limit``,
    only the best ``limit`` items are returned (and only they get a breakdown built). The sums run over arrays of
    the whole pool; only the returned items are walked one by one.
    """
    engaged = {dim: w for dim, w in spec.weights.items() if w > 0}
    keys: list[K] = list(dict.fromkeys(chain.from_iterable(signals.get(dim, {}) for dim in engaged)))
    if not keys:
        return []
    n = len(keys)
    index = {k: i for i, k in enumerate(keys)}
    totals = np.zeros(n, dtype=np.float64)
    strong = np.zeros(n, dtype=np.int64)
    columns: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]] = {}
    for dim, weight in engaged.items():
        sig = signals.get(dim, {})
        idx = np.fromiter(map(index.__getitem__, sig), dtype=np.int64, count=len(sig))
        raw = np.fromiter(sig.values(), dtype=np.float64, count=len(sig))
        norm = normalized_array(raw, spec.normalizers.get(dim, "minmax"))
        totals[idx] += weight * norm
        if spec.multi_bonus:
            strong[idx] += norm >= spec.multi_threshold
        columns[dim] = (idx, raw, norm)
    bonus = np.where(strong > 1, spec.multi_bonus * (strong - 1), 0.0)
    totals = np.where(strong > 1, totals + bonus, totals)
    cuts: dict[str, dict[int, float]] = {}
    for dim, p in spec.penalties.items():
        for key, value in signals.get(dim, {}).items():
            i = index.get(key)
            if p > 0 and value > 0 and i is not None:
                cut = float(totals[i]) * p * min(value, 1.0)
                totals[i] -= cut
                cuts.setdefault(dim, {})[i] = cut
    tie = signals.get(spec.tie_breaker, {}) if spec.tie_breaker else {}
    tie_of = np.fromiter(map(tie.get, keys, [0.0] * n), dtype=np.float64, count=n)
    names = [str(k) for k in keys]
    chosen = _best(totals, tie_of, names, limit)
    silent = {  # every raw score 0, so every normalised one too: the dimension found nothing
        dim for dim, (_, raw, norm) in columns.items() if raw.size and not raw.any() and not norm.any()
    }
    # Each explained dimension's part of every chosen item, gathered once per dimension: whether the dimension holds
    # the item, and its raw score, normalised score and rank there (ranks by ``ranks``' order).
    parts_of: dict[str, tuple[list[bool], list[float], list[float], list[int]]] = {}
    if chosen:
        chosen_at = np.asarray(chosen, dtype=np.int64)
        name_order = np.empty(n, dtype=np.int64)
        name_order[sorted(range(n), key=names.__getitem__)] = np.arange(n)
        for dim, (idx, raw, norm) in columns.items():
            if dim in silent or not idx.size:
                continue  # nothing scored above 0 in this dimension (or nothing at all): nothing to explain
            row_of = np.full(n, -1, dtype=np.int64)
            row_of[idx] = np.arange(len(idx))
            rows = row_of[chosen_at]
            held = rows >= 0
            rows = np.where(held, rows, 0)
            rank = _column_ranks(raw, name_order[idx])
            parts_of[dim] = (held.tolist(), raw[rows].tolist(), norm[rows].tolist(), rank[rows].tolist())
    out: list[Fused[K]] = []
    for j, i in enumerate(chosen):
        parts: dict[str, ScoreBreakdown] = {}
        for dim, weight in engaged.items():
            got = parts_of.get(dim)
            if got is None or not got[0][j]:
                continue  # absent from this dimension, or the dimension is silent
            value = got[2][j]
            parts[dim] = ScoreBreakdown(
                raw=got[1][j], normalized=value, weight=weight, contribution=weight * value, rank=got[3][j]
            )
        count = int(strong[i])
        if count > 1:
            parts[MULTI] = ScoreBreakdown(
                raw=count, normalized=count - 1, weight=spec.multi_bonus, contribution=spec.multi_bonus * (count - 1)
            )
        for dim, cut_of in cuts.items():
            if i in cut_of:
                raw_cut = signals[dim][keys[i]]
                parts[dim] = ScoreBreakdown(
                    raw=raw_cut, normalized=min(raw_cut, 1.0), weight=spec.penalties[dim], contribution=-cut_of[i]
                )
        out.append(Fused(keys[i], float(totals[i]), parts))
    return out


def reciprocal_rank_fusion(signals: Signals[K], spec: FusionSpec, limit: int | None = None) -> list[Fused[K]]:
    """Sum over dimensions of weight / (k + rank); the raw scores only set the ranks."""
    rank_of = {dim: ranks(signals.get(dim, {})) for dim in spec.weights}
    totals: dict[K, float] = {}
    for dim, weight in spec.weights.items():
        for key, rank in rank_of[dim].items():
            totals[key] = totals.get(key, 0.0) + weight / (spec.rrf_k + rank)
    out: list[Fused[K]] = []
    for key in _ordered_keys(totals, signals, spec.tie_breaker, limit):
        parts: dict[str, ScoreBreakdown] = {}
        for dim, weight in spec.weights.items():
            position = rank_of[dim].get(key)
            if position is not None:
                value = 1.0 / (spec.rrf_k + position)
                parts[dim] = ScoreBreakdown(
                    raw=signals[dim][key], normalized=value, weight=weight, contribution=weight * value, rank=position
                )
        out.append(Fused(key, totals[key], parts))
    return out


def fuse(signals: Signals[K], spec: FusionSpec, limit: int | None = None) -> list[Fused[K]]:
    """Fuse per-dimension scores with ``spec``; best first (the best ``limit`` when given)."""
    if spec.method == "rrf":
        return reciprocal_rank_fusion(signals, spec, limit)
    return weighted_sum(signals, spec, limit)


# The fusion methods of the designs memlane draws on, as named specs.
WEIGHTED = FusionSpec("weighted", {"dense": 0.6, "lexical": 0.4}, tie_breaker="recency")
BLEND = FusionSpec(
    "weighted",
    {"dense": 0.7, "importance": 0.2, "recency": 0.1},
    normalizers={"importance": "identity", "recency": "identity"},
)
RRF = FusionSpec("rrf", {"dense": 1.0, "lexical": 1.0}, rrf_k=60, tie_breaker="recency")
CONVEX = FusionSpec("weighted", {"dense": 0.7, "lexical": 0.3}, tie_breaker="recency")
_EXTRA: dict[str, Normalizer] = {
    **dict.fromkeys(("context", "entity", "temporal", "category", "intent", "recency", "importance"), "identity"),
    "graph": "max",  # PageRank masses: the best linked memory scores 1
}
# memlane's multi-dimensional default: content (dense + BM25) plus the turns around a memory, the people the query
# names and its time constraint. Weights chosen on the tuning conversations of LoCoMo (docs/benchmarks.md).
MULTI_DIM = FusionSpec(
    "weighted",
    {"dense": 0.6, "lexical": 0.4, "context": 0.35, "session": 0.1, "entity": 0.25, "temporal": 0.2},
    normalizers=_EXTRA,
    tie_breaker="recency",
    penalties={"validity": 0.9},
)
# ``multi`` with the graph dimension (personalised PageRank over shared entities and relations; retrieval/graph.py).
# Not the default for questions: on LoCoMo it did not raise recall (docs/design.md, the knowledge graph as built);
# ``multi`` engages it for dialogue excerpts only (``RetrievalPreset.dialogue_graph``).
MULTI_GRAPH = FusionSpec(
    "weighted",
    {**MULTI_DIM.weights, "graph": 0.1},
    normalizers=_EXTRA,
    tie_breaker="recency",
    penalties={"validity": 0.9},
)
# IMDMR's published weights, with its bonus for memories strong on several dimensions at once.
IMDMR = FusionSpec(
    "weighted",
    {"dense": 0.5, "entity": 0.4, "category": 0.3, "intent": 0.3, "context": 0.3, "temporal": 0.2},
    normalizers=_EXTRA,
    tie_breaker="recency",
    multi_bonus=0.1,
)
