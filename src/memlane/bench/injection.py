"""``memlane bench injection``: train the shipped classifier (``--train``) and measure the detector per subset,
recall and false-positive rate with 95% Wilson intervals, and its cost per memory.

Training fits on the train split only; the regularisation and the decision threshold are chosen on the val split;
the reported table comes from the dev split, which nothing is tuned on.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from memlane.bench.injection_data import Sample, Split, load_samples
from memlane.bench.metrics import percentile
from memlane.errors import MissingDependencyError
from memlane.security.classifier import BITS, ClassifierModel, feature_ids, windows
from memlane.security.detect import CombinedDetector, Detector
from memlane.security.obfuscation import unmask

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]

C_GRID: Final = (1.0, 4.0, 16.0, 64.0)
FPR_BUDGET: Final = 0.03  # the val false-positive rate the threshold may spend, below the 0.05 target for margin
SHIPPED: Final = Path(__file__).resolve().parent.parent / "security" / "data" / "injection_model.npz"


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# -- training ------------------------------------------------------------------------------------------------
def _training_views(sample: Sample) -> list[tuple[str, int]]:
    """The texts one sample trains on: the whole; for a long document also its windows, an indirect injection's
    windows labelled 1 only where they hold the inserted attack.
    """
    text = unmask(sample.text).text
    out = [(text, sample.label)]
    parts = windows(text)
    if len(parts) > 1 and (sample.label == 0 or sample.attack):
        marker = unmask(sample.attack).text[:40]
        out += [(p, int(bool(marker) and marker[:20] in p)) for p in parts]
    return out


def _matrix(texts: Sequence[str]) -> csr_matrix:
    from scipy.sparse import csr_matrix

    rows, cols = [], []
    for i, text in enumerate(texts):
        ids = feature_ids(text)
        rows.append(np.full(ids.size, i))
        cols.append(ids)
    r, c = np.concatenate(rows), np.concatenate(cols)
    counts = np.bincount(r, minlength=len(texts)).astype(np.float64)
    data = 1.0 / np.sqrt(np.maximum(counts[r], 1.0))
    return csr_matrix((data, (r, c)), shape=(len(texts), 1 << BITS))


def _fit(samples: Sequence[Sample], c: float) -> ClassifierModel:
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:
        raise MissingDependencyError("training the injection classifier", "bench") from exc
    per_subset = Counter(s.subset for s in samples)
    pairs: list[tuple[str, int, float]] = []
    for s in samples:
        views = _training_views(s)
        # every subset weighs the same in total, so the many BIPIA tables do not drown the direct injections
        weight = len(samples) / (len(per_subset) * per_subset[s.subset] * len(views))
        pairs += [(text, label, weight) for text, label in views]
    x = _matrix([t for t, _, _ in pairs])
    y = np.array([label for _, label, _ in pairs])
    w = np.array([weight for _, _, weight in pairs])
    clf = LogisticRegression(C=c, max_iter=2000, solver="liblinear", random_state=0)
    clf.fit(x, y, sample_weight=w)
    weights = clf.coef_[0].astype(np.float32)
    return ClassifierModel(weights, float(clf.intercept_[0]), 0.5, BITS)


@dataclass(frozen=True)
class Choice:
    """A candidate setting judged on val: its C, threshold, val recall and val false-positive rate."""

    c: float
    threshold: float
    recall: float
    fpr: float


def _threshold(scores: np.ndarray, labels: np.ndarray, subsets: Sequence[str]) -> tuple[float, float, float]:
    """The lowest threshold keeping the false-positive rate of the benign texts pooled, and of every benign subset
    of 30 or more texts, within ``FPR_BUDGET``; with the recall and pooled FPR it gives.
    """
    benign = labels == 0
    groups = [np.array([s == name for s in subsets]) & benign for name in sorted(set(subsets))]
    groups = [g for g in groups if g.sum() >= 30] + [benign]
    needed = 0.0
    for g in groups:
        ranked = np.sort(scores[g])[::-1]
        allowed = math.floor(FPR_BUDGET * g.sum())
        needed = max(needed, float(ranked[allowed]) + 1e-6 if allowed < ranked.size else 0.0)
    t = min(max(needed, 0.05), 1.0)
    flagged = scores >= t
    return t, float(flagged[labels == 1].mean()), float(flagged[benign].mean())


def train(data: Path, locomo: Path | None, out: Path = SHIPPED) -> tuple[ClassifierModel, list[Choice]]:
    """Fit on train for each C of ``C_GRID``, pick the C and threshold with the best val recall within the FPR
    budget, and write the model to ``out``.
    """
    fit_on = load_samples(data, None, ["train"])
    val = load_samples(data, locomo, ["val"])
    labels = np.array([s.label for s in val])
    subsets = [s.subset for s in val]
    choices: list[tuple[Choice, ClassifierModel]] = []
    for c in C_GRID:
        model = _fit(fit_on, c)
        detector = CombinedDetector(model, threshold=1.0)
        scores = np.array([detector.score(s.text)[0] for s in val])
        t, recall, fpr = _threshold(scores, labels, subsets)
        choices.append((Choice(c, t, recall, fpr), model))
    best, model = max(choices, key=lambda cm: (cm[0].recall, -cm[0].fpr))
    info = (
        f"logistic regression over {1 << BITS} hashed features; C={best.c}; threshold {best.threshold:.4f} "
        f"chosen on val (recall {best.recall:.3f}, FPR {best.fpr:.3f}); trained on deepset, jailbreak-classification, "
        "NotInject and BIPIA train splits (see NOTICE.md)"
    )
    final = ClassifierModel(model.weights, model.bias, best.threshold, BITS, info)
    out.parent.mkdir(parents=True, exist_ok=True)
    final.save(out)
    return final, [c for c, _ in choices]


# -- evaluation ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SubsetResult:
    """One row of the table: flagged out of n, and the rate with its 95% Wilson interval."""

    subset: str
    label: int
    n: int
    flagged: int

    @property
    def rate(self) -> float:
        return self.flagged / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.flagged, self.n)


@dataclass(frozen=True)
class Evaluation:
    """The detector on one split: rows per subset, pooled recall and FPR, and the cost per memory."""

    split: Split
    detector: str
    rows: list[SubsetResult]
    ms_mean: float
    ms_p95: float
    ms_turn_mean: float
    categories: list[SubsetResult] = field(default_factory=list)  # indirect injections by attack category

    def pooled(self, label: int) -> SubsetResult:
        rows = [r for r in self.rows if r.label == label]
        return SubsetResult("all", label, sum(r.n for r in rows), sum(r.flagged for r in rows))


def evaluate(detector: Detector, samples: Sequence[Sample], split: Split) -> Evaluation:
    """Scan every sample one at a time (the cost of one memory at ingest) and count flags per subset."""
    counts: dict[tuple[str, int], list[int]] = {}
    by_category: dict[str, list[int]] = {}
    timings: list[float] = []
    turn_timings: list[float] = []
    for s in samples:
        start = time.perf_counter()
        verdict = detector.scan([s.text])[0]
        ms = (time.perf_counter() - start) * 1000
        timings.append(ms)
        if s.subset == "locomo-turns":
            turn_timings.append(ms)
        row = counts.setdefault((s.subset, s.label), [0, 0])
        row[0] += 1
        row[1] += int(verdict.flagged)
        if s.category:
            cat = by_category.setdefault(s.category, [0, 0])
            cat[0] += 1
            cat[1] += int(verdict.flagged)
    rows = [
        SubsetResult(sub, label, n, f)
        for (sub, label), (n, f) in sorted(counts.items(), key=lambda kv: (-kv[0][1], kv[0][0]))
    ]
    return Evaluation(
        split,
        detector.name,
        rows,
        float(np.mean(timings)) if timings else 0.0,
        percentile(timings, 0.95),
        float(np.mean(turn_timings)) if turn_timings else 0.0,
        [SubsetResult(c, 1, n, f) for c, (n, f) in sorted(by_category.items())],
    )


def run(data: Path, locomo: Path | None, split: Split, detector: Detector | None = None) -> Evaluation:
    """Measure ``detector`` (the default combined one) on ``split``."""
    return evaluate(detector or CombinedDetector(), load_samples(data, locomo, [split]), split)


def markdown(ev: Evaluation, command: str, load: str) -> str:
    """The measured table as markdown."""
    lines = [
        f"Detector `{ev.detector}` on the **{ev.split}** split; `{command}`; load average {load}.",
        "",
        "| subset | label | n | flagged | rate | 95% interval |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in [*ev.rows, ev.pooled(1), ev.pooled(0)]:
        what = "recall" if r.label else "FPR"
        low, high = r.interval
        lines.append(
            f"| {r.subset} | {'injection' if r.label else 'benign'} | {r.n} | {r.flagged} | {what} {r.rate:.3f} | [{low:.3f}, {high:.3f}] |"
        )
    lines += [
        "",
        f"Cost per memory at ingest (one text per call): mean {ev.ms_mean:.2f} ms, p95 {ev.ms_p95:.2f} ms; "
        f"LoCoMo turns mean {ev.ms_turn_mean:.2f} ms.",
    ]
    if ev.categories:
        lines += [
            "",
            "Indirect injections by attack category:",
            "",
            "| category | n | flagged | recall | 95% interval |",
        ]
        lines.append("| --- | ---: | ---: | ---: | --- |")
        for r in ev.categories:
            low, high = r.interval
            lines.append(f"| {r.subset} | {r.n} | {r.flagged} | {r.rate:.3f} | [{low:.3f}, {high:.3f}] |")
    return "\n".join(lines)


def as_json(ev: Evaluation) -> dict[str, Any]:
    """The evaluation as JSON-ready data."""
    return {
        "split": ev.split,
        "detector": ev.detector,
        "rows": [
            {
                "subset": r.subset,
                "label": r.label,
                "n": r.n,
                "flagged": r.flagged,
                "rate": r.rate,
                "interval": r.interval,
            }
            for r in ev.rows
        ],
        "recall": ev.pooled(1).rate,
        "fpr": ev.pooled(0).rate,
        "ms_mean": ev.ms_mean,
        "ms_p95": ev.ms_p95,
    }
