"""``memlane bench injection``: train the shipped detector (``--train``), measure it per subset (recall and
false-positive rate with 95% Wilson intervals, and its cost per memory), or leave one source out (``--loso``, in
``injection_report`` and ``injection_loso``).

The shipped detector is fitted on every row of every training source (``injection_loso``), so the hash-split
``dev`` and ``val`` tables below read rows it was fitted on: they show the cost per memory and what each subset
looks like, not an estimate for new data. The estimate is the leave-one-source-out table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from memlane.bench.injection_data import Sample, Split, load_samples
from memlane.bench.injection_report import loso_command as loso_command
from memlane.bench.metrics import percentile
from memlane.security.classifier import ClassifierModel
from memlane.security.detect import CombinedDetector, Detector

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
@dataclass(frozen=True)
class Choice:
    """A setting tried in training, with the recall and false-positive rate it gave where it was chosen."""

    c: float
    threshold: float
    recall: float
    fpr: float


def train(data: Path, locomo: Path | None, out: Path = SHIPPED) -> tuple[ClassifierModel, list[Choice]]:
    """Refused: the shipped detector's stacker, thresholds and head come from the leave-one-source-out folds, so
    it is trained by ``memlane bench injection --loso --train`` (``injection_report.run_loso``).
    """
    raise ValueError(
        "train the detector with `memlane bench injection --loso --train`: its threshold and embedding "
        "head are chosen on the leave-one-source-out folds"
    )


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


def evaluate(
    detector: Detector, samples: Sequence[Sample], split: Split, vectors: npt.NDArray[np.float32] | None = None
) -> Evaluation:
    """Scan every sample one at a time (the cost of one memory at ingest) and count flags per subset; with
    ``vectors`` (one row per sample) the combined detector reads each text's embedding, as it does at ingest
    (computing the embedding is not timed: the write computes it for storage anyway).
    """
    counts: dict[tuple[str, int], list[int]] = {}
    by_category: dict[str, list[int]] = {}
    timings: list[float] = []
    turn_timings: list[float] = []
    embedded = vectors is not None and isinstance(detector, CombinedDetector)
    for i, s in enumerate(samples):
        start = time.perf_counter()
        if embedded and isinstance(detector, CombinedDetector) and vectors is not None:
            verdict = detector.scan_embedded([s.text], vectors[i : i + 1])[0]
        else:
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
    """Measure ``detector`` (the default combined one) on ``split``, reading the default embedder's vectors
    when the detector's head was fitted on them.
    """
    from memlane.bench.injection_report import cached_embed

    detector = detector or CombinedDetector()
    samples = load_samples(data, locomo, [split])
    vectors = None
    if isinstance(detector, CombinedDetector):
        identity, embed = cached_embed(None)
        if detector.reads_vectors(identity):
            vectors = embed([s.text for s in samples])
    return evaluate(detector, samples, split, vectors)


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
