"""Learning fusion weights from labelled queries: coordinate ascent on recall@k over per-dimension features."""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

# Candidate values of one weight, tried in turn while the others stay fixed (coordinate ascent, as in RankLib).
GRID: tuple[float, ...] = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class LabelledQuery:
    """A query of one user and the ids of the memories that answer it."""

    query: str
    user_id: str
    relevant: frozenset[str]
    group: str = ""  # queries of one group (e.g. one conversation) are kept on the same side of a split


@dataclass(frozen=True)
class QueryMatrix:
    """One query's candidates as rows, its dimensions as columns (normalised values), and which rows are relevant."""

    dims: tuple[str, ...]
    values: npt.NDArray[np.float64]
    relevant: npt.NDArray[np.bool_]
    n_relevant: int

    @classmethod
    def build(
        cls, dims: Sequence[str], normalised: Mapping[str, Mapping[str, float]], relevant: frozenset[str]
    ) -> QueryMatrix:
        """Rows for every candidate of any dimension; a candidate absent from a dimension scores 0 there."""
        keys = list(dict.fromkeys(k for d in dims for k in normalised.get(d, {})))
        values = np.zeros((len(keys), len(dims)), dtype=np.float64)
        for j, d in enumerate(dims):
            col = normalised.get(d, {})
            for i, k in enumerate(keys):
                values[i, j] = col.get(k, 0.0)
        mask = np.fromiter((k in relevant for k in keys), dtype=bool, count=len(keys))
        return cls(tuple(dims), values, mask, len(relevant))


def recall_at(matrix: QueryMatrix, weights: npt.NDArray[np.float64], k: int) -> float:
    """Recall@k of the ranking by ``values @ weights`` (ties broken by row order, as a stable sort does)."""
    if matrix.n_relevant == 0 or matrix.values.shape[0] == 0:
        return 0.0
    scores = matrix.values @ weights
    top = np.argsort(-scores, kind="stable")[:k]
    return float(matrix.relevant[top].sum()) / matrix.n_relevant


def mean_recall(matrices: Sequence[QueryMatrix], weights: npt.NDArray[np.float64], k: int) -> float:
    """Mean recall@k over queries (0.0 for none)."""
    return statistics.fmean(recall_at(m, weights, k) for m in matrices) if matrices else 0.0


@dataclass
class FitResult:
    """Learned weights, and how they do against the starting weights on the queries fitted and on held-out ones."""

    weights: dict[str, float]
    start: dict[str, float]
    k: int
    train_queries: int
    test_queries: int
    train_before: float
    train_after: float
    test_before: float
    test_after: float
    rounds: int = 0
    trace: list[str] = field(default_factory=list)

    @property
    def test_gain(self) -> float:
        return self.test_after - self.test_before


def coordinate_ascent(
    matrices: Sequence[QueryMatrix],
    start: Mapping[str, float],
    *,
    k: int = 10,
    grid: Sequence[float] = GRID,
    max_rounds: int = 5,
    min_gain: float = 1e-4,
) -> tuple[dict[str, float], int, list[str]]:
    """Change one weight at a time to the grid value that most improves mean recall@k; stop when none does."""
    if not matrices:
        return dict(start), 0, []
    dims = matrices[0].dims
    w = np.array([float(start.get(d, 0.0)) for d in dims])
    best = mean_recall(matrices, w, k)
    trace: list[str] = []
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        improved = False
        for j, d in enumerate(dims):
            for value in grid:
                if value == w[j]:
                    continue
                trial = w.copy()
                trial[j] = value
                if not trial.any():
                    continue
                score = mean_recall(matrices, trial, k)
                if score > best + min_gain:
                    best, w, improved = score, trial, True
                    trace.append(f"round {rounds}: {d} -> {value} (recall@{k} {best:.4f})")
        if not improved:
            break
    return {d: float(v) for d, v in zip(dims, w, strict=True)}, rounds, trace


def split_groups(queries: Sequence[LabelledQuery], test_share: float = 0.3) -> tuple[list[int], list[int]]:
    """Indices of train and test queries; whole groups go to one side, chosen by a hash (stable across runs)."""
    groups = sorted({q.group or q.query for q in queries})
    if len(groups) < 2:
        return list(range(len(queries))), []
    ranked = sorted(groups, key=lambda g: hashlib.sha256(g.encode("utf-8")).hexdigest())
    n_test = max(1, round(len(ranked) * test_share))
    test_groups = set(ranked[:n_test])
    train = [i for i, q in enumerate(queries) if (q.group or q.query) not in test_groups]
    test = [i for i, q in enumerate(queries) if (q.group or q.query) in test_groups]
    return train, test


def fit(
    matrices: Sequence[QueryMatrix],
    start: Mapping[str, float],
    train: Sequence[int],
    test: Sequence[int],
    *,
    k: int = 10,
) -> FitResult:
    """Fit on the ``train`` queries; report recall@k before and after on both sides."""
    train_m = [matrices[i] for i in train]
    test_m = [matrices[i] for i in test]
    weights, rounds, trace = coordinate_ascent(train_m, start, k=k)
    dims = matrices[0].dims if matrices else ()
    w0 = np.array([float(start.get(d, 0.0)) for d in dims])
    w1 = np.array([weights.get(d, 0.0) for d in dims])
    return FitResult(
        weights=weights,
        start={d: float(start.get(d, 0.0)) for d in dims},
        k=k,
        train_queries=len(train_m),
        test_queries=len(test_m),
        train_before=mean_recall(train_m, w0, k),
        train_after=mean_recall(train_m, w1, k),
        test_before=mean_recall(test_m, w0, k),
        test_after=mean_recall(test_m, w1, k),
        rounds=rounds,
        trace=trace,
    )
