"""``memlane migrate``: the command over ``memlane.migrate`` (a progress bar per phase, the report as a table)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.options import env_config
from memlane.cli.output import dump, err, fail, out, show
from memlane.errors import MemlaneError

if TYPE_CHECKING:  # the copy, the stores and rich's widgets load when the command runs
    from rich.progress import TaskID
    from rich.table import Table

    from memlane.migrate import MigrationReport

_UNITS = {
    "memories": "memories",
    "archive": "users",
    "evict": "users",
    "jobs": "users",
    "history": "users",
    "graph": "users",
    "security": "users",
}


def _default_checkpoint(source: str, target: str) -> Path:
    key = hashlib.sha256(f"{source}\n{target}".encode()).hexdigest()[:16]
    return env_config().data_dir / "migrations" / f"{key}.json"


def _table(report: MigrationReport) -> Table:
    from rich.table import Table

    table = Table(title="verification", title_justify="left")
    for col in ("check", "source", "target", ""):
        table.add_column(col)
    for c in report.checks:
        table.add_row(c.name, show(c.source), show(c.target), "ok" if c.ok else "DIFFERENT")
    return table


def migrate_command(
    source: Annotated[str, typer.Option("--from", help="The store to copy: a path or URL, e.g. sqlite:///old.db.")],
    target: Annotated[
        str, typer.Option("--to", help="An empty store to copy into, e.g. sqlite:///new.db?vectors=qdrant://HOST:6333.")
    ],
    checkpoint: Annotated[
        Path | None,
        typer.Option(help="Where the copy records its progress (default: under $MEMLANE_HOME/migrations/)."),
    ] = None,
    batch: Annotated[int, typer.Option(help="Memories per transaction and checkpoint.", min=1)] = 500,
    sample: Annotated[int, typer.Option(help="Searches compared on both sides afterwards.", min=0)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")] = False,
) -> None:
    """Copy a whole store into another backend (resumable: run it again after an interruption), then verify."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from memlane.migrate import migrate
    from memlane.store import open_store

    path = checkpoint or _default_checkpoint(source, target)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    tasks: dict[str, TaskID] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(f"{phase} ({_UNITS.get(phase, 'items')})", total=total or None)
        bar.update(tasks[phase], completed=done, total=total or None)

    try:
        src = open_store(source)
        try:
            dst = open_store(target)
            try:
                with bar:
                    report = migrate(src, dst, path, batch=batch, sample=sample, on_progress=progress)
            finally:
                dst.close()
        finally:
            src.close()
    except MemlaneError as exc:
        fail(f"{exc} (progress is kept in {path}: run the same command again to resume)")
    point = report.checkpoint
    if as_json:
        dump(
            {
                "ok": report.ok,
                "checkpoint": str(path),
                "copied": point.copied,
                "skipped": point.skipped,
                "resumed": point.resumed,
                "notes": point.notes,
                "checks": [{"name": c.name, "source": c.source, "target": c.target, "ok": c.ok} for c in report.checks],
            }
        )
    else:
        for phase, n in point.copied.items():
            extra = f" ({point.skipped[phase]} already there)" if point.skipped.get(phase) else ""
            out.print(f"{phase:>9}: {n} copied{extra}", highlight=False)
        for note in point.notes:
            out.print(f"note: {note}", highlight=False)
        out.print(_table(report))
    if not report.ok:
        fail("the copy differs from the source: see the checks above")
