"""Pooling labelled-set reports: every query of every run counted once, the default against each other preset.

One held-out set of 21 to 75 queries moves MRR@10 by 0.01-0.05 per query; a claim about "data nobody here wrote"
is better carried by all of them together. ``pool`` reads the JSON reports that ``memlane bench docs`` (and the
other labelled-set benches) write, keeps the presets every run has, and gives each preset's mean over all queries
with a paired bootstrap of the default against each other preset (``metrics.paired_bootstrap_test``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import ValidationError as PydanticValidationError

from memlane.bench.docs import DocsReport
from memlane.bench.labelled import SetReport
from memlane.bench.locomo import read_text
from memlane.bench.metrics import bootstrap_mean, paired_bootstrap_test
from memlane.errors import ValidationError

METRICS: Final = ("mrr", "recall@10", "ndcg@10")


@dataclass(frozen=True)
class PooledScore:
    """One preset's mean of one metric over the pooled queries, with its 95% bootstrap interval."""

    preset: str
    metric: str
    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class PooledComparison:
    """``preset`` minus the default over the same pooled queries: the mean difference, its interval and p."""

    preset: str
    metric: str
    delta: float
    low: float
    high: float
    p: float


@dataclass(frozen=True)
class Pooled:
    """What ``pool`` found: the runs pooled, the number of queries, the default, scores and comparisons."""

    runs: list[str]
    queries: int
    default: str
    scores: list[PooledScore]
    comparisons: list[PooledComparison]


def load_runs(paths: Sequence[Path]) -> list[SetReport]:
    """Every labelled-set run of the reports at ``paths`` (a ``bench docs`` report or one set's report)."""
    runs: list[SetReport] = []
    for path in paths:
        try:
            data = json.loads(read_text(path))
            if isinstance(data, dict) and data.get("kind") == "docs":
                runs.extend(DocsReport.model_validate(data).runs)
            else:
                runs.append(SetReport.model_validate(data))
        except (OSError, ValueError, PydanticValidationError) as exc:
            raise ValidationError(f"{path}: not a labelled-set report ({type(exc).__name__}: {exc})") from None
    if not runs:
        raise ValidationError("no runs to pool: give at least one report")
    return runs


def pool(runs: Sequence[SetReport], *, resamples: int = 4000) -> Pooled:
    """Pool the queries of ``runs`` over the presets all of them measured; the default must be one of them."""
    defaults = {r.name for run in runs for r in run.results if r.is_default}
    if len(defaults) != 1:
        raise ValidationError(f"the runs disagree on the default preset or have none: {sorted(defaults)}")
    default = defaults.pop()
    common = set.intersection(*({r.name for r in run.results} for run in runs))
    if default not in common:
        raise ValidationError(f"the default preset {default!r} is not in every run")
    presets = [default, *sorted(common - {default})]
    values: dict[tuple[str, str], list[float]] = {(p, m): [] for p in presets for m in METRICS}
    for run in runs:
        by_name = {r.name: r for r in run.results}
        order = [q.qid for q in by_name[default].questions]
        for preset in presets:
            rows = {q.qid: q for q in by_name[preset].questions}
            if set(rows) != set(order):
                raise ValidationError(f"{run.set_name}: {preset!r} answered other queries than the default")
            for metric in METRICS:
                values[preset, metric].extend(rows[qid].metric(metric) for qid in order)
    scores = [PooledScore(p, m, *bootstrap_mean(values[p, m], resamples=resamples)) for p in presets for m in METRICS]
    comparisons = [
        PooledComparison(p, m, *paired_bootstrap_test(values[default, m], values[p, m], resamples=resamples))
        for p in presets[1:]
        for m in METRICS
    ]
    return Pooled(
        runs=[run.set_name for run in runs],
        queries=len(values[default, METRICS[0]]),
        default=default,
        scores=scores,
        comparisons=comparisons,
    )


def render_pooled(pooled: Pooled) -> str:
    """Markdown: the runs pooled, each preset's pooled means, and each preset against the default."""
    lines = [
        f"{pooled.queries} queries pooled from {len(pooled.runs)} runs: {'; '.join(pooled.runs)}",
        "",
        "| preset | " + " | ".join(f"{m} (95% CI)" for m in METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    by_preset: dict[str, list[PooledScore]] = {}
    for s in pooled.scores:
        by_preset.setdefault(s.preset, []).append(s)
    for preset, scores in by_preset.items():
        name = f"{preset} (default)" if preset == pooled.default else preset
        cells = " | ".join(f"{s.mean:.3f} ({s.low:.3f}-{s.high:.3f})" for s in scores)
        lines.append(f"| {name} | {cells} |")
    lines += ["", "| preset | vs | metric | delta | 95% CI | p |", "|---|---|---|---|---|---|"]
    for c in pooled.comparisons:
        lines.append(
            f"| {c.preset} | {pooled.default} | {c.metric} | {c.delta:+.3f} | {c.low:+.3f} to {c.high:+.3f} | {_p(c.p)} |"
        )
    return "\n".join(lines)


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"
