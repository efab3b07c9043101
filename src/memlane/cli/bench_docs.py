"""``memlane bench docs``: any BEIR folder (documents, queries, relevance), every preset, batched and one per call.

Registered on the ``bench`` group by ``memlane.cli.bench`` (this module imports nothing of it).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from memlane.cli.options import PRESET_NAMES
from memlane.errors import MemlaneError

out = Console(soft_wrap=True)
err = Console(stderr=True)


class _Bars:
    """Progress of each phase as one rich bar on stderr (a ``Tracker``)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def phase(self, description: str, total: int) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, steps: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, steps)


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
) -> None:
    """Documentation retrieval on BEIR folders: MRR@10, R@10 and nDCG@10 with CIs, paired tests against the default."""
    from memlane.bench.docs import BATCHES, render_docs_report, run_docs
    from memlane.bench.locomo import write_json

    try:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as progress:
            tracker = _Bars(progress)
            report = run_docs(data, batches=batch or BATCHES, presets=config_names, embedder=embedder, tracker=tracker)
    except MemlaneError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    report.command = (
        shlex.join(["memlane", *sys.argv[1:]]) if Path(sys.argv[0]).name == "memlane" else "memlane bench docs"
    )
    out.print(render_docs_report(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")
