"""The ``memlane`` command line: a thin adapter over the ``Memory`` API. This module only assembles it: the
commands live in one module per group, each registered below.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

import memlane.cli.memories as memories
import memlane.cli.upkeep as upkeep
from memlane.cli.bench import bench_app
from memlane.cli.documents import add_docs
from memlane.cli.graph import graph
from memlane.cli.mcp import mcp_command
from memlane.cli.migrate import migrate_command
from memlane.cli.options import GLOBAL_OPTIONS
from memlane.cli.output import OneLineErrors
from memlane.cli.server import keys_app, serve
from memlane.cli.worker import worker_command


def hoist_global_options(group: TyperGroup, args: Sequence[str]) -> list[str]:
    """``args`` with the global options given before the command (``--db X``, ``--embedder=Y``) moved to just after
    it, where the command defines them; so ``memlane --db X add ...`` is ``memlane add --db X ...``.

    The command is found through nested groups (``memlane --db X graph ...``); without one, ``args`` are left as they
    are, for the usage error to name the option.
    """
    rest, moved = list(args), []
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        name, eq, _ = rest[i].partition("=")
        if name not in GLOBAL_OPTIONS:
            i += 1
        elif eq:
            moved.append(rest.pop(i))
        elif i + 1 < len(rest):
            moved += [rest.pop(i), rest.pop(i)]
        else:
            break
    command: object = group
    end = i
    while end < len(rest) and isinstance(command, TyperGroup) and rest[end] in command.commands:
        command = command.commands[rest[end]]
        end += 1
    if not moved or end == i:
        return list(args)
    return [*rest[:end], *moved, *rest[end:]]


class MemlaneCommand(OneLineErrors):
    """The root group: one-line errors, and global options accepted before the command as well as after it."""

    def main(self, args: Any = None, *posargs: Any, **kwargs: Any) -> Any:
        given = sys.argv[1:] if args is None else list(args)
        return super().main(hoist_global_options(self, given), *posargs, **kwargs)


app = typer.Typer(
    name="memlane",
    cls=MemlaneCommand,
    help="Long-term memory for conversational AI: offline, embedded, explainable. "
    f"{' and '.join(GLOBAL_OPTIONS)} may also stand before the command: memlane --db m.db search ...",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# -- the commands: the groups and commands of their own modules, then memories.py (write and read) and upkeep.py
# (jobs, archive, transfer, maintenance); the order here is the order of `memlane --help`
app.add_typer(bench_app, name="bench")
app.add_typer(keys_app, name="keys")
app.command()(serve)
app.command(name="mcp")(mcp_command)
app.command(name="worker")(worker_command)
app.command(name="graph")(graph)
app.command(name="migrate")(migrate_command)
app.command(name="add-docs")(add_docs)  # memlane.cli.documents
app.command()(memories.add)
app.command()(memories.search)
app.command()(memories.ask)
app.command()(memories.observe)
app.command()(memories.get)
app.command(name="list")(memories.list_)
app.command()(memories.delete)
app.command()(upkeep.jobs)
app.command()(upkeep.archive)
app.command()(memories.history)
app.command()(upkeep.export)
app.command(name="import")(upkeep.import_)
app.command()(upkeep.stats)
app.command()(upkeep.compact)
app.command()(upkeep.reindex)
app.command()(upkeep.demo)
app.command()(upkeep.tune)


def main() -> None:
    """Entry point of the ``memlane`` script."""
    app()
