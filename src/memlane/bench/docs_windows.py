"""How far one keyword weight per collection goes: for each run of ``memlane bench docs`` that measured ``convex@W``
presets, the weights whose MRR@10 and R@10 are both at or above ``dense``'s and ``convex``'s.

A collection where no weight qualifies is one where no tuning of the dense/BM25 mix, even with its own relevance
labels, is at or above both plain dense search and the fixed convex mix; a collection where only 0 or 0.3 qualifies
is one where only one of the two baselines themselves does.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlane.bench.docs import DocsReport
from memlane.bench.labelled import SetConfigResult
from memlane.config import CONVEX_AT, preset

BASELINES = ("dense", "convex")


def _scores(res: SetConfigResult) -> tuple[float, float]:
    g = res.group("all")
    return g.mrr.mean, g.recall[10].mean


def _at_or_above(scores: tuple[float, float], bar: tuple[float, float]) -> bool:
    return scores[0] >= bar[0] - 1e-12 and scores[1] >= bar[1] - 1e-12


def sweep_presets(weights: Sequence[float]) -> list[str]:
    """``dense``, ``convex`` and ``convex@W`` for every W (validated), in that order, each once."""
    names = [*BASELINES, *(preset(f"{CONVEX_AT}{w:g}").name for w in weights)]
    return list(dict.fromkeys(names))


def weight_windows(report: DocsReport) -> list[str]:
    """A table: per run, the baselines, the default, and the ``convex@W`` weights at or above both baselines."""
    lines = [
        "| set | added | dense MRR / R@10 | convex | default | weights at or above both (MRR and R@10) |",
        "|---|---|---|---|---|---|",
    ]
    runs = qualifying = default_ok = 0
    for run in report.runs:
        by_name = {r.name: r for r in run.results}
        swept = [r for r in run.results if r.name.startswith(CONVEX_AT)]
        if not swept or any(b not in by_name for b in BASELINES):
            continue
        dense, convex = (_scores(by_name[b]) for b in BASELINES)
        bar = (max(dense[0], convex[0]), max(dense[1], convex[1]))
        good = [r.name[len(CONVEX_AT) :] for r in swept if _at_or_above(_scores(r), bar)]
        default = next((r for r in run.results if r.is_default), None)
        shown = "n/a"
        if default is not None:
            d = _scores(default)
            ok = _at_or_above(d, bar)
            default_ok += ok
            shown = f"{d[0]:.3f} / {d[1]:.3f}{' *' if ok else ''}"
        runs += 1
        qualifying += bool(good)
        name, _, mode = run.set_name.partition(" (")
        lines.append(
            f"| {name} | {mode.rstrip(')')} | {dense[0]:.3f} / {dense[1]:.3f} | {convex[0]:.3f} / {convex[1]:.3f} "
            f"| {shown} | {', '.join(good) if good else 'none'} |"
        )
    if not runs:
        return []
    lines.append("")
    lines.append(
        f"{qualifying} of {runs} runs have a weight at or above both baselines; the default is at or above both "
        f"(*) on {default_ok}."
    )
    return lines
