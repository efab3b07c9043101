"""Retrieval metrics and bootstrap confidence intervals, as pure functions over ids."""

from __future__ import annotations

import math
import random
import re
import statistics
from collections.abc import Sequence


def recall_at_k(retrieved: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Fraction of the evidence ids found among the first ``k`` retrieved ids (0.0 when there is no evidence).

    This is LoCoMo's "recall accuracy": a question without evidence counts as 0, as the paper's scripts do.
    """
    gold = set(evidence)
    if not gold:
        return 0.0
    top = set(retrieved[:k])
    return len(gold & top) / len(gold)


def ndcg_at_k(retrieved: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Binary-relevance nDCG@k: each evidence id counts once, at its first position."""
    gold = set(evidence)
    if not gold:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for i, rid in enumerate(retrieved[:k]):
        if rid in gold and rid not in seen:
            seen.add(rid)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal


def reciprocal_rank(retrieved: Sequence[str], evidence: Sequence[str]) -> float:
    """1 / position of the first evidence id retrieved, 0.0 when none is."""
    gold = set(evidence)
    for i, rid in enumerate(retrieved):
        if rid in gold:
            return 1.0 / (i + 1)
    return 0.0


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """The mean of ``values`` and a percentile-bootstrap confidence interval for it: ``(mean, low, high)``."""
    if not values:
        return 0.0, 0.0, 0.0
    mean = statistics.fmean(values)
    if len(values) == 1:
        return mean, mean, mean
    rng = random.Random(seed)
    n = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0
    low = means[math.floor(tail * (resamples - 1))]
    high = means[math.ceil((1.0 - tail) * (resamples - 1))]
    return mean, low, high


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float, float]:
    """Paired bootstrap of mean(b) - mean(a) over the same questions: ``(delta, low95, high95, p_two_sided)``."""
    if len(a) != len(b):
        raise ValueError("paired_bootstrap needs two sequences of the same length")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    delta, low, high = bootstrap_ci(diffs, resamples=resamples, seed=seed)
    if not diffs:
        return 0.0, 0.0, 0.0, 1.0
    rng = random.Random(seed + 1)
    n = len(diffs)
    centred = [d - delta for d in diffs]
    extreme = sum(1 for _ in range(resamples) if abs(statistics.fmean(rng.choices(centred, k=n))) >= abs(delta))
    return delta, low, high, (extreme + 1) / (resamples + 1)


def bootstrap_mean(
    values: Sequence[float], *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """``bootstrap_ci`` vectorised with numpy (same percentile method, its own random stream): ``(mean, low, high)``."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0.0, 0.0, 0.0
    mean = float(arr.mean())
    if arr.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = np.sort(arr[rng.integers(0, arr.size, size=(resamples, arr.size))].mean(axis=1))
    tail = (1.0 - confidence) / 2.0
    return mean, float(means[math.floor(tail * (resamples - 1))]), float(means[math.ceil((1 - tail) * (resamples - 1))])


def paired_bootstrap_test(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float, float]:
    """``paired_bootstrap`` vectorised with numpy: ``(mean(b) - mean(a), low95, high95, p_two_sided)``.

    The p-value is that of the null "no difference": the paired differences are centred on zero and resampled,
    and p is the share of resampled means at least as far from zero as the observed one.
    """
    import numpy as np

    if len(a) != len(b):
        raise ValueError("paired_bootstrap_test needs two sequences of the same length")
    diffs = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if diffs.size == 0:
        return 0.0, 0.0, 0.0, 1.0
    delta, low, high = bootstrap_mean(diffs.tolist(), resamples=resamples, seed=seed)
    rng = np.random.default_rng(seed + 1)
    centred = diffs - delta
    means = centred[rng.integers(0, diffs.size, size=(resamples, diffs.size))].mean(axis=1)
    extreme = int(np.count_nonzero(np.abs(means) >= abs(delta) - 1e-12))
    return delta, low, high, (extreme + 1) / (resamples + 1)


_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Word-level tokens of a text (runs of word characters, and each other non-space character)."""
    return len(_TOKEN.findall(text))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
