"""The documentation-retrieval section of docs/benchmarks.md: every held-out docs-qa run, and all of them pooled.

The held-out runs are the ``memlane bench docs`` reports named ``heldout*.json.gz`` under ``docs/results/docs/``:
FAQ sets that other projects wrote (``evalsets/docs-qa/``), each run once after the default it measures was fixed.
Each run's row sets the default beside plain vector search (``dense``) and the dense + BM25 ``convex`` preset; the
pool counts every query of every run once, with paired tests of the default against each preset
(``memlane.bench.pool``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from memlane.bench.labelled import SetReport
from memlane.bench.locomo import read_text
from memlane.bench.pool import load_runs, pool, render_pooled

HELDOUT_GLOB: Final = "docs/heldout*.json.gz"
BASELINES: Final = ("dense", "convex")


def _figures(run: SetReport, name: str) -> tuple[float, float, int] | None:
    """MRR@10, R@10 and the number of queries of preset ``name`` over the whole run (as ``pool`` counts them);
    None when the run did not measure it.
    """
    for res in run.results:
        if res.name == name and res.questions:
            n = len(res.questions)
            mrr = sum(q.metric("mrr") for q in res.questions) / n
            return mrr, sum(q.metric("recall@10") for q in res.questions) / n, n
    return None


def run_rows(runs: Sequence[SetReport]) -> list[str]:
    """One row per run: the default's MRR@10 and R@10 beside each baseline's, and whether it is at or above both
    baselines in both figures (point estimates).
    """
    lines = [
        "| set (added) | queries | default MRR@10 / R@10 | "
        + " | ".join(f"`{b}` MRR@10 / R@10" for b in BASELINES)
        + " | at or above both |",
        "|---|---|---|" + "---|" * len(BASELINES) + "---|",
    ]
    for run in runs:
        default = next((r for r in run.results if r.is_default), None)
        if default is None:
            continue
        own = _figures(run, default.name)
        if own is None:
            continue
        cells, above = [], True
        for base in BASELINES:
            theirs = _figures(run, base)
            if theirs is None:
                cells.append("—")
                above = False
                continue
            cells.append(f"{theirs[0]:.3f} / {theirs[1]:.3f}")
            above = above and own[0] >= theirs[0] - 1e-9 and own[1] >= theirs[1] - 1e-9
        lines.append(
            f"| {run.set_name} | {own[2]} | {own[0]:.3f} / {own[1]:.3f} | "
            + " | ".join(cells)
            + f" | {'yes' if above else 'no'} |"
        )
    return lines


def docs_section(results: Path) -> list[str]:
    """The Markdown section, or nothing when ``results`` holds no held-out docs-qa report."""
    paths = sorted(results.glob(HELDOUT_GLOB))
    if not paths:
        return []
    runs = load_runs(paths)
    commands = [c for c in dict.fromkeys(str(json.loads(read_text(p)).get("command", "")) for p in paths) if c]
    files = ", ".join(f"`{p.relative_to(results)}`" for p in paths)
    return [
        "## Documentation retrieval: FAQ sets written by other projects",
        "",
        "Each set pairs a project's FAQ questions, verbatim, with the FAQ's own answers among passages of the rest of "
        "its documentation as Debian ships it (`evalsets/docs-qa/README.md`); documents added 200 per `add` call or "
        "one per call (no session). Each run was made once, on the tree of its day (in its JSON), after the default "
        "it measures was fixed; MiniLM q8. Per set, one query moves MRR@10 by 0.01-0.05: the pool below counts every "
        "query of every run once. "
        f"Results in `docs/results/`: {files}.",
        "",
        "```bash",
        *commands,
        "memlane bench pool docs/results/docs/heldout*.json.gz",
        "```",
        "",
        *run_rows(runs),
        "",
        render_pooled(pool(runs)),
        "",
    ]
