"""``memlane bench docs``: any BEIR folder (documents, queries, relevance), every preset, batched and one per call.

Registered on the ``bench`` group by ``memlane.cli.bench`` (this module imports nothing of it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memlane.cli.bench_common import command_line, err, fail_run, out, tracking
from memlane.cli.options import PRESET_NAMES
from memlane.errors import MemlaneError


def bench_docs(
    data: Annotated[
        list[Path],
        typer.Option(
            "--data",
            help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv), repeatable; "
            "e.g. ../shared/data/docs-qa/django-faq-qa.",
        ),
    ],
    batch: Annotated[
        list[int] | None,
        typer.Option("--batch", help="Documents per add call, repeatable (a fresh store each). Default: 200 and 1."),
    ] = None,
    config_names: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "--preset",
            help=f"Retrieval preset(s) to measure, repeatable ({', '.join(PRESET_NAMES)}, default). Default: all.",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option("--embedder", envvar="MEMLANE_EMBEDDER", help="minilm (default), static, hash (smoke only)."),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write all results to this JSON (.gz) file.")] = None,
    sweep: Annotated[
        str | None,
        typer.Option(
            "--sweep",
            help="Keyword weights, comma-separated (e.g. 0,0.1,0.2,0.3,0.4): also measure convex@W for each and "
            "print, per run, the weights at or above both dense and convex on MRR@10 and R@10.",
        ),
    ] = None,
    stores: Annotated[
        Path | None,
        typer.Option(
            "--stores",
            help="Keep each store in this folder (NAME-batchB.db) and search one that exists as it is "
            "(read-path changes only). Default: a fresh temporary store each run.",
        ),
    ] = None,
) -> None:
    """Documentation retrieval on BEIR folders: MRR@10, R@10 and nDCG@10 with CIs, paired tests against the default."""
    from memlane.bench.docs import BATCHES, render_docs_report, run_docs
    from memlane.bench.docs_windows import sweep_presets, weight_windows
    from memlane.bench.locomo import write_json

    try:
        if sweep is not None:
            try:
                weights = [float(w) for w in sweep.split(",") if w.strip()]
            except ValueError:
                fail_run(f"--sweep takes comma-separated numbers from 0 to 1, got {sweep!r}")
            config_names = [*(config_names or PRESET_NAMES), *sweep_presets(weights)]
        with tracking() as tracker:
            report = run_docs(
                data, batches=batch or BATCHES, presets=config_names, embedder=embedder, tracker=tracker, stores=stores
            )
    except MemlaneError as exc:
        fail_run(str(exc))
    report.command = command_line("docs")
    out.print(render_docs_report(report), highlight=False)
    windows = weight_windows(report)
    if windows:
        out.print("\n" + "\n".join(windows), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


def bench_pool(
    reports: Annotated[
        list[Path],
        typer.Argument(help="JSON reports (.json or .json.gz) written by bench docs or another labelled set."),
    ],
) -> None:
    """Pool the queries of several runs: each preset's mean over all of them, paired tests against the default."""
    from memlane.bench.pool import load_runs, pool, render_pooled

    try:
        pooled = pool(load_runs(reports))
    except MemlaneError as exc:
        fail_run(str(exc))
    out.print(render_pooled(pooled), highlight=False)
