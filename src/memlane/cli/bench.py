"""``memlane bench``: retrieval quality (LoCoMo, MemoryBank, dialogue queries, technical), scale, peers, and the report."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from memlane.cli.bench_docs import bench_docs
from memlane.config import PRESETS
from memlane.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.bench.labelled import LabelledSet

bench_app = typer.Typer(help="Measure retrieval quality and speed, and build docs/benchmarks.md.", no_args_is_help=True)
bench_app.command("docs")(bench_docs)

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


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def _command(name: str) -> str:
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


@bench_app.command("locomo")
def bench_locomo(
    data: DataOpt,
    config_names: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "--preset",
            help=f"Retrieval preset(s) to measure, repeatable ({', '.join(PRESETS)}, default). Default: all.",
        ),
    ] = None,
    split: Annotated[str, typer.Option("--split", help="Conversations: all, tune or holdout.")] = "all",
    embedder: EmbedderOpt = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write all results to this JSON (.gz) file.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N conversations.")] = None,
    quick: QuickOpt = False,
    store: Annotated[
        str | None,
        typer.Option("--store", help="An empty store URL to measure (e.g. postgresql://...). Default: SQLite."),
    ] = None,
) -> None:
    """Turn-level LoCoMo retrieval: recall@k, nDCG@10, MRR per category with CIs, paired tests, tokens, latency."""
    from memlane.bench.locomo import render_report, run_locomo, write_json

    try:
        with tracking() as tracker:
            report = run_locomo(
                data,
                presets=config_names,
                split=split,
                embedder=embedder,
                limit=limit,
                quick=quick,
                tracker=tracker,
                store=store,
            )
    except MemlaneError as exc:
        _fail(str(exc))
    report.command = _command("locomo")
    out.print(render_report(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


@bench_app.command("ask")
def bench_ask(
    locomo: Annotated[
        Path | None, typer.Option("--locomo", help="Also run the structured layer on this LoCoMo file.")
    ] = None,
    split: Annotated[str, typer.Option("--split", help="LoCoMo conversations: all, tune or holdout.")] = "all",
    embedder: EmbedderOpt = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the results (without LoCoMo's text) to this JSON file.")
    ] = None,
) -> None:
    """ask() on the household scenario (accuracy per question kind), and the LoCoMo questions it claims."""
    from memlane.bench.ask import render, run_ask_bench, saved_json

    try:
        report = run_ask_bench(embedder=embedder, locomo=locomo, split=split)
    except MemlaneError as exc:
        _fail(str(exc))
    report.command = _command("ask")
    out.print(render(report), highlight=False, markup=False)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(saved_json(report) + "\n", encoding="utf-8")
        err.print(f"wrote {json_out}")


@bench_app.command("injection")
def bench_injection(
    data: Annotated[
        Path, typer.Option("--data", help="The labelled injection folder (../shared/data/injection).")
    ] = Path("../shared/data/injection"),
    locomo: Annotated[
        Path | None,
        typer.Option("--locomo", help="LoCoMo JSON whose turns are the benign conversation (evaluation only)."),
    ] = None,
    split: Annotated[str, typer.Option("--split", help="dev (reported) or val (where settings are chosen).")] = "dev",
    detector: Annotated[str, typer.Option("--detector", help="default (rules + classifier) or rules.")] = "default",
    train: Annotated[
        bool, typer.Option("--train", help="First refit the shipped classifier on the train split.")
    ] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the results as JSON.")] = None,
) -> None:
    """Injection detector: recall and false-positive rate per subset with 95% Wilson intervals, and cost per memory."""
    import json
    import os

    from memlane.bench.injection import as_json, markdown, run
    from memlane.bench.injection import train as fit
    from memlane.security.detect import CombinedDetector, Detector, RulesDetector

    if split not in ("dev", "val"):
        _fail(f"--split must be dev or val, got {split!r}")
    if detector not in ("default", "rules"):
        _fail(f"--detector must be default or rules, got {detector!r}")
    try:
        if train:
            model, choices = fit(data, locomo)
            for c in choices:
                err.print(f"C={c.c:g}: threshold {c.threshold:.4f}, val recall {c.recall:.3f}, val FPR {c.fpr:.3f}")
            err.print(model.info, highlight=False)
        chosen: Detector = CombinedDetector() if detector == "default" else RulesDetector()
        ev = run(data, locomo, "dev" if split == "dev" else "val", chosen)
    except (MemlaneError, OSError, ValueError, KeyError) as exc:
        _fail(str(exc))
    load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    out.print(markdown(ev, _command("injection"), load), highlight=False)
    if json_out is not None:
        json_out.write_text(json.dumps(as_json(ev), indent=2), encoding="utf-8")


@bench_app.command("extraction")
def bench_extraction(
    samples: Annotated[
        list[Path],
        typer.Option(
            "--samples", help="Labelled JSONL sample file(s), e.g. tests/fixtures/extraction/claims_heldout.jsonl."
        ),
    ],
    min_confidence: Annotated[float, typer.Option("--min-confidence", help="The storing threshold.")] = 0.6,
    show_misses: Annotated[bool, typer.Option("--misses", help="List false positives and negatives.")] = False,
) -> None:
    """Offline extractor precision, recall and claim agreement on hand-labelled turns."""
    from memlane.bench.extraction import load_turns, score_turns
    from memlane.extraction.offline import RuleExtractor

    extractor = RuleExtractor()
    for path in samples:
        try:
            score = score_turns(extractor, load_turns(path), min_confidence=min_confidence)
        except MemlaneError as exc:
            _fail(str(exc))
        out.print(
            f"{path.name}: {score.turns} turns, tp={score.tp} fp={score.fp} fn={score.fn} "
            f"precision={score.precision:.3f} recall={score.recall:.3f} "
            f"claim agreement={score.claims_agree}/{score.claims}",
            highlight=False,
        )
        if show_misses:
            for miss in score.misses:
                what = f"FP {miss.text!r}" if miss.label is None else f"FN {miss.label.kind} {list(miss.label.must)}"
                out.print(f"  {miss.turn}: {what}", highlight=False)


@bench_app.command("ablation")
def bench_ablation(
    data: DataOpt,
    base: Annotated[str, typer.Option("--base", help="The preset whose dimensions are removed in turn.")] = "multi",
    split: Annotated[str, typer.Option("--split", help="Conversations: all, tune or holdout.")] = "all",
    embedder: EmbedderOpt = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results to this JSON (.gz) file.")] = None,
    quick: QuickOpt = False,
) -> None:
    """Each dimension removed in turn, the keyword-boost trigger rate, and recall with and without extraction."""
    from memlane.bench.ablation import render_ablation, run_ablation
    from memlane.bench.locomo import write_json

    try:
        with tracking() as tracker:
            report = run_ablation(data, base=base, split=split, embedder=embedder, quick=quick, tracker=tracker)
    except MemlaneError as exc:
        _fail(str(exc))
    report.command = _command("ablation")
    out.print("\n".join(render_ablation(report)), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


@bench_app.command("scale")
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
    from memlane.bench.locomo import write_json
    from memlane.bench.scale import ScalePlan, ScaleReport, render_scale, run_scale

    try:
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
        command = _command("scale")

        def checkpoint(partial: ScaleReport) -> None:
            partial.command = command
            if json_out is not None:
                write_json(partial, json_out)

        with tracking() as tracker:
            report = run_scale(data, memorybank, plan, tracker=tracker, on_point=checkpoint)
    except MemlaneError as exc:
        _fail(str(exc))
    report.command = command
    out.print(render_scale(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


@bench_app.command("ann")
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
        _fail(str(exc))
    out.print(markdown(rows), highlight=False)
    if json_out is not None:
        payload = {"command": _command("ann"), "rows": [r.model_dump() for r in rows]}
        json_out.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        err.print(f"wrote {json_out}")


@bench_app.command("peers")
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
    from memlane.bench.locomo import write_json
    from memlane.bench.peers import PeerPlan, PeersReport, render_peers, run_peers

    try:
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
        command = _command("peers")

        def checkpoint(partial: PeersReport) -> None:
            partial.command = command
            if json_out is not None:
                write_json(partial, json_out)

        with tracking() as tracker:
            report = run_peers(data, memorybank, plan, tracker=tracker, on_update=checkpoint)
    except MemlaneError as exc:
        _fail(str(exc))
    report.command = command
    out.print(render_peers(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


@bench_app.command("report")
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
        _fail(str(exc))
    for path in written:
        err.print(f"wrote {path}")


ConfigsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--config",
        "--preset",
        help=f"Retrieval preset(s) to measure, repeatable ({', '.join(PRESETS)}, default). Default: all.",
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


def _run_labelled(
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
        _fail(str(exc))
    report.command = _command(name)
    out.print(render_set_report(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


@bench_app.command("memorybank")
def bench_memorybank(
    data: Annotated[
        Path | None,
        typer.Option("--data", help="MemoryBank folder (../shared/data/memorybank). Default: the bundled copy."),
    ] = None,
    config_names: ConfigsOpt = None,
    split: SetSplitOpt = "all",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = None,
    quick: QuickOpt = False,
) -> None:
    """MemoryBank's 100 probing questions, labelled with the turns that answer them, searched per user."""
    from memlane.bench.memorybank import load_memorybank

    try:
        evalset = load_memorybank(data)
    except MemlaneError as exc:
        _fail(str(exc))
    if quick:
        evalset = evalset.first_scopes(1)
    _run_labelled("memorybank", evalset, config_names, split, embedder, json_out)


@bench_app.command("dialogue")
def bench_dialogue(
    data: Annotated[
        Path | None,
        typer.Option(
            "--data", help="LoCoMo JSON file for the derived set (e.g. ../shared/data/locomo/locomo_dev.json)."
        ),
    ] = None,
    which: Annotated[
        str,
        typer.Option(
            "--set",
            help="locomo (derived at run time from --data), original, original2 or original3 (bundled, written for memlane).",
        ),
    ] = "locomo",
    config_names: ConfigsOpt = None,
    split: SetSplitOpt = "all",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = None,
    quick: QuickOpt = False,
) -> None:
    """Dialogue excerpts as queries over dated event descriptions, searched per conversation or person."""
    from memlane.bench.dialogue import load_dialogue_locomo

    try:
        if which == "locomo":
            if data is None:
                _fail("--set locomo needs --data, the LoCoMo JSON file")
            evalset = load_dialogue_locomo(data)
        else:
            from memlane.bench.dialogue_original import FIXTURES, load_dialogue_original

            if which not in FIXTURES:
                _fail(f"unknown --set {which!r}; choose locomo, {', '.join(FIXTURES)}")
            evalset = load_dialogue_original(FIXTURES[which])
    except MemlaneError as exc:
        _fail(str(exc))
    if quick:
        evalset = evalset.first_scopes(1, max_queries=25)
    _run_labelled("dialogue", evalset, config_names, split, embedder, json_out)


@bench_app.command("technical")
def bench_technical(
    config_names: ConfigsOpt = None,
    split: SetSplitOpt = "all",
    embedder: EmbedderOpt = None,
    json_out: JsonOpt = None,
    quick: QuickOpt = False,
) -> None:
    """Error messages and how-to questions over the Python documentation topics, one passage per memory."""
    from memlane.bench.technical import load_technical

    try:
        evalset = load_technical()
    except MemlaneError as exc:
        _fail(str(exc))
    if quick:
        evalset = evalset.first_scopes(1, max_queries=25)
    _run_labelled("technical", evalset, config_names, split, embedder, json_out)


@bench_app.command("load")
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
                _fail("--url needs --key (or MEMLANE_API_KEY)")
            result = run_load(url, key, clients=clients, seconds=seconds, add_share=add_share, async_adds=async_adds)
    except MemlaneError as exc:
        _fail(str(exc))
    report = {
        "command": _command("load"),
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
