"""``memlane bench``: the group of benchmark commands. The commands live in one module per family; each is
registered below, in the order ``memlane bench --help`` lists them.
"""

from __future__ import annotations

import typer

import memlane.cli.bench_docs as bench_docs
import memlane.cli.bench_quality as bench_quality
import memlane.cli.bench_speed as bench_speed
import memlane.cli.bench_ui as bench_ui
from memlane.cli.bench_common import command_line as _command

__all__ = ["_command", "bench_app"]  # _command: the command line recorded in results files, by its older name

bench_app = typer.Typer(help="Measure retrieval quality and speed, and build docs/benchmarks.md.", no_args_is_help=True)

# -- registration: one line per command (a new family lives in its own module, e.g. cli/bench_docs.py, and is added
# here with `bench_app.command("docs")(bench_docs.bench_docs)`)
bench_app.command("locomo")(bench_quality.bench_locomo)
bench_app.command("ask")(bench_quality.bench_ask)
bench_app.command("injection")(bench_quality.bench_injection)
bench_app.command("extraction")(bench_quality.bench_extraction)
bench_app.command("ablation")(bench_quality.bench_ablation)
bench_app.command("scale")(bench_speed.bench_scale)
bench_app.command("ann")(bench_speed.bench_ann)
bench_app.command("peers")(bench_speed.bench_peers)
bench_app.command("report")(bench_speed.bench_report)
bench_app.command("memorybank")(bench_quality.bench_memorybank)
bench_app.command("dialogue")(bench_quality.bench_dialogue)
bench_app.command("technical")(bench_quality.bench_technical)
bench_app.command("load")(bench_speed.bench_load)
bench_app.command("docs")(bench_docs.bench_docs)
bench_app.command("pool")(bench_docs.bench_pool)
bench_app.command("inspector")(bench_ui.bench_inspector)
