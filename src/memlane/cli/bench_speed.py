"""``memlane bench`` on speed and scale: scale, the ANN index, peers side by side, load, and the report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.bench_common import (
    DataOpt,
    EmbedderOpt,
    QuickOpt,
    command_line,
    err,
    fail_run,
    out,
    run_checkpointed,
    tracking,
)
from memlane.errors import MemlaneError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from memlane.bench.peers import PeersReport
    from memlane.bench.scale import ScaleReport
    from memlane.cli.bench_common import RichTracker


def bench_scale(
    data: DataOpt,
    memorybank: Annotated[
        Path | None, typer.Option("--memorybank", help="MemoryBank folder (../shared/data/memorybank) for more text.")
    ] = None,
    sizes: Annotated[
        list[int] | None, typer.Option("--size", help="Corpus sizes, repeatable. Default: 1k, 10k, 100k, 1M.")
    ] = None,
    embedders: Annotated[
        list[str] | None, typer.Option("--embedder", help="Embedder(s), repeatable. Default: minilm and static.")
    ] = None,
    max_size: Annotated[
        list[str] | None,
        typer.Option("--max-size", help="EMBEDDER=N: largest size measured with that embedder, e.g. minilm=100000."),
    ] = None,
    users: Annotated[
        list[int] | None, typer.Option("--users", help="User scopes the corpus is spread over. Default: 1 and 1000.")
    ] = None,
    queries: Annotated[int, typer.Option("--queries", help="Timed searches per point.")] = 200,
    preset: Annotated[
        str | None, typer.Option("--preset", help="Retrieval preset searched with. Default: the configured default.")
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results to this JSON file.")] = None,
    quick: QuickOpt = False,
    store: Annotated[
        str | None,
        typer.Option("--store", help="An empty store URL to measure (e.g. postgresql://...). Default: SQLite files."),
    ] = None,
    filled: Annotated[
        str | None,
        typer.Option(
            "--filled",
            help="USER: this user of the --store already holds the corpus of the one --size (an earlier run's, or "
            "copied by `memlane migrate`); search and chat are measured, ingest is not.",
        ),
    ] = None,
    clients: Annotated[
        int,
        typer.Option("--clients", help="Also run N concurrent client processes of the chat workload per point."),
    ] = 1,
) -> None:
    """Ingest items/s, search p50/p95/p99 (alone, and right after an add), peak RSS and disk against size and users."""
    from memlane.bench.scale import ScalePlan, render_scale, run_scale

    def run(tracker: RichTracker, checkpoint: Callable[[BaseModel], None]) -> ScaleReport:
        plan = ScalePlan.build(
            sizes=sizes,
            embedders=embedders,
            users=users,
            max_sizes=max_size,
            queries=queries,
            quick=quick,
            preset=preset,
            store=store,
            filled=filled,
            clients=clients,
        )
        return run_scale(data, memorybank, plan, tracker=tracker, on_point=checkpoint)

    run_checkpointed("scale", run, render_scale, json_out)


def bench_ann(
    data: DataOpt,
    memorybank: Annotated[
        Path | None, typer.Option("--memorybank", help="MemoryBank folder (../shared/data/memorybank) for more text.")
    ] = None,
    sizes: Annotated[
        list[int] | None, typer.Option("--size", help="Corpus sizes, repeatable. Default: 10k, 100k, 1M.")
    ] = None,
    embedder: Annotated[str, typer.Option("--embedder", help="Embedder of corpus and queries.")] = "static",
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Candidates whose name starts with this, repeatable.")
    ] = None,
    ef: Annotated[list[int] | None, typer.Option("--ef", help="HNSW ef_search values, repeatable.")] = None,
    m: Annotated[int, typer.Option("--m", help="HNSW connectivity (M).")] = 32,
    ef_construction: Annotated[int, typer.Option("--ef-construction", help="HNSW ef_construction.")] = 200,
    queries: Annotated[int, typer.Option("--queries", help="Timed searches per point.")] = 200,
    cache: Annotated[
        Path, typer.Option("--cache", help="Folder for the embedded corpus (.npy, ~1.5 GB at 1M, 384-d).")
    ] = Path("bench-cache"),
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the rows to this JSON file.")] = None,
) -> None:
    """Vector-index candidates: recall@10 against exact search, latency, insert/remove cost, files, filters."""
    import json

    from memlane.bench.ann import markdown, run

    try:
        with tracking() as tracker:
            rows = run(
                data,
                memorybank,
                sizes or (10_000, 100_000, 1_000_000),
                n_queries=queries,
                embedder=embedder,
                cache=cache,
                only=only,
                efs=tuple(ef or (64, 128, 256, 512)),
                m=m,
                ef_c=ef_construction,
                tracker=tracker,
            )
    except MemlaneError as exc:
        fail_run(str(exc))
    out.print(markdown(rows), highlight=False)
    if json_out is not None:
        payload = {"command": command_line("ann"), "rows": [r.model_dump() for r in rows]}
        json_out.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        err.print(f"wrote {json_out}")


def bench_peers(
    data: DataOpt,
    memorybank: Annotated[
        Path | None, typer.Option("--memorybank", help="MemoryBank folder (../shared/data/memorybank) for more text.")
    ] = None,
    systems: Annotated[
        list[str] | None,
        typer.Option("--system", help="Systems, repeatable: memlane, bm25s, chroma, lancedb, mem0. Default: all."),
    ] = None,
    sizes: Annotated[
        list[int] | None, typer.Option("--size", help="Corpus sizes for speed, repeatable. Default: 10k and 100k.")
    ] = None,
    max_size: Annotated[
        list[str] | None,
        typer.Option("--max-size", help="SYSTEM=N: largest speed point measured for that system, e.g. mem0=10000."),
    ] = None,
    queries: Annotated[int, typer.Option("--queries", help="Timed searches per speed point.")] = 200,
    embedder: EmbedderOpt = None,
    locomo: Annotated[bool, typer.Option("--locomo/--no-locomo", help="Measure LoCoMo quality too.")] = True,
    text_form: Annotated[
        str,
        typer.Option(
            "--text-form",
            help="What every system gets for a LoCoMo turn: 'bare' text, or 'dated' ('Caroline, 8 May 2023: ...').",
        ),
    ] = "bare",
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results to this JSON (.gz) file.")] = None,
    quick: QuickOpt = False,
) -> None:
    """Compare memlane with mem0, LanceDB, Chroma and BM25 (bm25s): LoCoMo recall, ingest and search speed."""
    from memlane.bench.peers import PeerPlan, render_peers, run_peers

    def run(tracker: RichTracker, checkpoint: Callable[[BaseModel], None]) -> PeersReport:
        plan = PeerPlan.build(
            systems=systems,
            sizes=sizes,
            max_sizes=max_size,
            queries=queries,
            embedder=embedder,
            quick=quick,
            locomo=locomo,
            text_form=text_form,
        )
        return run_peers(data, memorybank, plan, tracker=tracker, on_update=checkpoint)

    run_checkpointed("peers", run, render_peers, json_out)


def bench_load(
    url: Annotated[
        str | None, typer.Option("--url", help="A running server (default: start one on a fresh temp data dir).")
    ] = None,
    key: Annotated[str | None, typer.Option("--key", envvar="MEMLANE_API_KEY", help="API key for --url.")] = None,
    clients: Annotated[int, typer.Option("--clients", help="Concurrent clients.")] = 50,
    seconds: Annotated[float, typer.Option("--seconds", help="How long to run.")] = 60.0,
    add_share: Annotated[
        float, typer.Option("--add-share", help="Share of requests that add (the rest search).")
    ] = 0.3,
    async_adds: Annotated[
        bool, typer.Option("--async-adds", help="Adds queue their extraction as a job (202), e.g. for Celery workers.")
    ] = False,
    embedder: EmbedderOpt = None,
) -> None:
    """REST load on loopback: concurrent clients, mixed add/search; throughput, p50/p95/p99, errors (JSON)."""
    import json

    from memlane.bench.load import run_load, spawned_server

    try:
        if url is None:
            with spawned_server(embedder) as (spawned, admin_key):
                result = run_load(
                    spawned, admin_key, clients=clients, seconds=seconds, add_share=add_share, async_adds=async_adds
                )
        else:
            if not key:
                fail_run("--url needs --key (or MEMLANE_API_KEY)")
            result = run_load(url, key, clients=clients, seconds=seconds, add_share=add_share, async_adds=async_adds)
    except MemlaneError as exc:
        fail_run(str(exc))
    report = {
        "command": command_line("load"),
        "clients": result.clients,
        "seconds": round(result.seconds, 1),
        "requests": result.requests,
        "throughput_rps": round(result.throughput, 1),
        "errors": result.errors,
        "server_errors": result.server_errors,
        "by_op": {op: {k: round(v, 1) for k, v in d.items()} for op, d in result.by_op.items()},
        "load_average": [round(x, 2) for x in result.load_average],
    }
    out.print(json.dumps(report, indent=2), highlight=False)


def bench_report(
    results: Annotated[
        Path, typer.Option("--results", help="Folder of JSON results (locomo.json.gz, scale*.json, peers*.json.gz).")
    ] = Path("docs/results"),
    out_md: Annotated[Path, typer.Option("--out", help="Markdown file to write.")] = Path("docs/benchmarks.md"),
    img: Annotated[Path, typer.Option("--img", help="Folder for the PNG plots.")] = Path("docs/img"),
) -> None:
    """Write docs/benchmarks.md and the PNG plots under docs/img/ from the JSON results."""
    from memlane.bench.report import write_report

    try:
        written = write_report(results, out_md, img)
    except MemlaneError as exc:
        fail_run(str(exc))
    for path in written:
        err.print(f"wrote {path}")
