"""`memlane bench inspector`: the inspector's page times with a large scope (needs memlane[server] and httpx)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from memlane.cli.bench_common import command_line as _command
from memlane.cli.bench_common import out, tracking


def bench_inspector(
    n: Annotated[int, typer.Option("--n", min=100, max=10_000_000, help="Memories in the one scope timed.")] = 100_000,
    repeats: Annotated[int, typer.Option("--repeats", min=1, max=100, help="Loads of each page timed.")] = 5,
    embedder: Annotated[str, typer.Option("--embedder", help="Embedder of the filled store.")] = "static",
) -> None:
    """Fill one user with N turns (static embedder, no extraction) and time each inspector page (JSON)."""
    from memlane.bench.inspector import load_average, run

    before = [round(x, 2) for x in load_average()]
    with tracking() as progress:
        progress.phase(f"filling {n} memories", n)
        times, filled = run(n=n, repeats=repeats, progress=progress.advance, embedder=embedder)
    report = {
        "command": _command("inspector"),
        "memories": n,
        "embedder": embedder,
        "fill_seconds": round(filled, 1),
        "load_before": before,
        "load_average": [round(x, 2) for x in load_average()],
        "pages": [
            {
                "page": t.page,
                "path": t.path,
                "status": t.status,
                "median_ms": round(t.median_ms, 1),
                "p90_ms": round(t.p90_ms, 1),
            }
            for t in times
        ],
    }
    out.print(json.dumps(report, indent=2), highlight=False)
