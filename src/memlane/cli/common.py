"""What the memory commands share: opening a ``Memory`` for one command, progress bars, reading message files,
and the table of ranked hits.

Heavy modules (the engine, the models, rich's tables) are imported when a command runs, so that ``memlane --help``
and the commands that need no model start fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.cli.options import env_config
from memlane.cli.output import err, fail, show
from memlane.errors import MemlaneError, ValidationError

if TYPE_CHECKING:
    from rich.progress import Progress
    from rich.table import Table

    from memlane.engine import Memory
    from memlane.models import Hit, Message
    from memlane.security.validation import Limits


@contextmanager
def open_memory(db: str | Path | None, embedder: str | None) -> Iterator[Memory]:
    """A Memory for one command, with memlane errors turned into a clean exit."""
    from memlane.engine import Memory

    try:
        config = env_config()
        with Memory(db, embedder=embedder, config=config) as memory:
            yield memory
    except MemlaneError as exc:
        fail(str(exc))
    except OSError as exc:  # the store's directory cannot be created or opened
        fail(f"cannot open the store {str(db or 'default')[:200]!r}: {exc.strerror or type(exc).__name__}")


def progress() -> Progress:
    """The progress bar every long phase uses (written to stderr)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a bar is for a person watching; a pipe gets the result lines only
    )


def read_source(source: str) -> str:
    """The text of a file (or stdin for '-'), or a ValidationError naming what is wrong with it."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except IsADirectoryError:
        raise ValidationError(f"{source[:200]}: is a directory, not a file") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {source[:200]!r}: {exc.strerror or type(exc).__name__}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{source[:200]}: not UTF-8 text (byte {exc.start})") from None


def read_messages(source: str, limits: Limits) -> list[Message]:
    """Every message of a JSON list or JSONL file, all checked before any is added."""
    from memlane.security.validation import check_messages

    text = read_source(source).strip()
    if not text:
        raise ValidationError(f"{source}: no messages")
    try:
        data = json.loads(text)
        rows = data if isinstance(data, list) else [data]
    except RecursionError:
        raise ValidationError(f"{source}: JSON nests too deeply") from None
    except json.JSONDecodeError:
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValidationError(f"{source}: line {n} is not JSON: {exc.msg}") from None
                except RecursionError:
                    raise ValidationError(f"{source}: line {n} nests too deeply") from None
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, str | dict):
            raise ValidationError(f"{source}: message {n} must be an object or a string")
    try:
        return check_messages(rows, replace(limits, batch=max(len(rows), 1)))
    except ValidationError as exc:
        raise ValidationError(f"{source}: {exc}") from None


def hits_table(hits: list[Hit], explain: bool) -> Table:
    """Ranked hits as a table: score, memory, and why (each dimension's contribution; with ``explain``, raw scores)."""
    from rich.table import Table

    table = Table(show_lines=explain)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("memory")
    table.add_column("why")
    table.add_column("id", overflow="fold", max_width=12)
    for rank, hit in enumerate(hits, start=1):
        who = f"{show(hit.memory.speaker)}: " if hit.memory.speaker else ""
        when = hit.memory.timestamp.date().isoformat()
        parts = []
        for dim, b in sorted(hit.breakdown.items(), key=lambda kv: -kv[1].contribution):
            if explain:
                parts.append(f"{dim} raw={b.raw:.3f} norm={b.normalized:.2f} x{b.weight:g} = {b.contribution:.3f}")
                if dim in hit.triggers:
                    parts.append(f"  [dim]{show(hit.triggers[dim])}[/]")
            else:
                parts.append(f"{dim} {b.contribution:.2f}")
        if explain and hit.related:
            forms = ", ".join(f"{m.kind.value} {m.id}" for m in hit.related)
            parts.append(f"[dim]also matched as {show(forms)}: the same statement, folded into this hit[/]")
        table.add_row(
            str(rank),
            f"{hit.score:.3f}",
            f"[dim]{when}[/] {who}{show(hit.memory.text)}"
            + (
                f"\n[bold red]flagged: likely prompt injection ({show(', '.join(hit.flag.reasons))})[/]"
                if hit.flag
                else ""
            ),
            "\n".join(parts),
            show(hit.memory.id),
        )
    return table


def lazy_memory(module: str, name: str) -> Any:
    """The ``__getattr__`` of a command module that names ``Memory``: the engine is imported on first use, so that
    the command line starts without the models (and a test can still replace ``module.Memory``).
    """
    if name == "Memory":
        from memlane.engine import Memory

        return Memory
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


def memory_type(module: str) -> type[Memory]:
    """The ``Memory`` class a command module opens: its ``Memory`` attribute (see ``lazy_memory``)."""
    found: type[Memory] = sys.modules[module].Memory
    return found
