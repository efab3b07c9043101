"""What the ``memlane bench`` commands share: their consoles and options, progress bars per phase, the command line
as recorded in results files, and running one labelled set.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from memlane.cli.options import PRESET_NAMES
from memlane.errors import MemlaneError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from memlane.bench.labelled import LabelledSet

out = Console(soft_wrap=True)
err = Console(stderr=True)

EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        envvar="MEMLANE_EMBEDDER",
        help="minilm (default, q8), minilm-int8, minilm-fp32, static, hash (smoke tests only).",
    ),
]
QuickOpt = Annotated[bool, typer.Option("--quick", help="A small subset that finishes in well under two minutes.")]
DataOpt = Annotated[
    Path,
    typer.Option("--data", help="LoCoMo JSON file (e.g. ../shared/data/locomo/locomo_dev.json)."),
]


def fail_run(message: str) -> NoReturn:
    """End a bench command with its error in red on stderr (exit code 2)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def command_line(name: str) -> str:
    """The command line as typed, program name shortened to ``memlane`` (just the command when run embedded); the
    value of ``--key`` (an API key, kept in results files) is replaced by ``$MEMLANE_API_KEY``.
    """
    if Path(sys.argv[0]).name == "memlane":
        args = list(sys.argv[1:])
        for i, arg in enumerate(args):
            if arg == "--key" and i + 1 < len(args):
                args[i + 1] = "$MEMLANE_API_KEY"
            elif arg.startswith("--key="):
                args[i] = "--key=$MEMLANE_API_KEY"
        return shlex.join(["memlane", *args])
    return f"memlane bench {name}"


class RichTracker:
    """A ``Tracker`` drawing one rich progress bar per phase, on stderr."""

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


@contextmanager
def tracking() -> Iterator[RichTracker]:
    """A tracker whose bars are shown while the block runs."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    with progress:
        yield RichTracker(progress)


ConfigsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--config",
        "--preset",
        help=f"Retrieval preset(s) to measure, repeatable ({', '.join(PRESET_NAMES)}, default). Default: all.",
    ),
]
SetSplitOpt = Annotated[
    str,
    typer.Option(
        "--split",
        help="all (scores per split and together), tune, holdout (the one to report), or holdout2 to holdout4 (later held-out rounds, where a set has them).",
    ),
]
JsonOpt = Annotated[Path | None, typer.Option("--json", help="Write all results to this JSON (.gz) file.")]


def run_labelled(
    name: str,
    evalset: LabelledSet,
    config_names: list[str] | None,
    split: str,
    embedder: str | None,
    json_out: Path | None,
) -> None:
    """Run one labelled set, print its report and write its JSON."""
    from memlane.bench.labelled import render_set_report, run_set
    from memlane.bench.locomo import write_json

    try:
        with tracking() as tracker:
            report = run_set(evalset, presets=config_names, split=split, embedder=embedder, tracker=tracker)
    except MemlaneError as exc:
        fail_run(str(exc))
    report.command = command_line(name)
    out.print(render_set_report(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


R = TypeVar("R", bound="BaseModel")


def run_checkpointed(
    name: str,
    run: Callable[[RichTracker, Callable[[BaseModel], None]], R],
    render: Callable[[R], str],
    json_out: Path | None,
) -> None:
    """Run a bench whose partial report is written to ``json_out`` after each point (so a long run that is stopped
    keeps what it measured); print the final report and write it.
    """
    from memlane.bench.locomo import write_json

    command = command_line(name)

    def checkpoint(partial: BaseModel) -> None:
        partial.command = command  # type: ignore[attr-defined]  # every bench report has one
        if json_out is not None:
            write_json(partial, json_out)

    try:
        with tracking() as tracker:
            report = run(tracker, checkpoint)
    except MemlaneError as exc:
        fail_run(str(exc))
    report.command = command  # type: ignore[attr-defined]
    out.print(render(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")
