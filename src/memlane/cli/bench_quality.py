"""``memlane bench`` on quality: LoCoMo, answers, injection, extraction, ablations and the labelled sets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memlane.cli.bench_common import (
    ConfigsOpt,
    DataOpt,
    EmbedderOpt,
    JsonOpt,
    QuickOpt,
    SetSplitOpt,
    command_line,
    err,
    fail_run,
    out,
    run_labelled,
    tracking,
)
from memlane.cli.options import PRESET_NAMES
from memlane.errors import MemlaneError


def bench_locomo(
    data: DataOpt,
    config_names: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "--preset",
            help=f"Retrieval preset(s) to measure, repeatable ({', '.join(PRESET_NAMES)}, default). Default: all.",
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
        fail_run(str(exc))
    report.command = command_line("locomo")
    out.print(render_report(report), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


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
        fail_run(str(exc))
    report.command = command_line("ask")
    out.print(render(report), highlight=False, markup=False)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(saved_json(report) + "\n", encoding="utf-8")
        err.print(f"wrote {json_out}")


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
    loso: Annotated[bool, typer.Option("--loso", help="Leave-one-source-out table (--train: ship its model).")] = False,
    cost: Annotated[
        bool,
        typer.Option(
            "--cost",
            help="CPU ms per text instead: docs-qa passages, BIPIA documents, short prompts, LoCoMo turns (--locomo).",
        ),
    ] = False,
    corpus: Annotated[
        list[Path] | None,
        typer.Option("--corpus", help="With --cost: JSONL passages to time (default evalsets/docs-qa/*/corpus.jsonl)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="With --cost: texts timed per kind.")] = 3000,
) -> None:
    """Injection detector: recall and false-positive rate per subset with 95% Wilson intervals, and cost per memory;
    ``--cost``: the detector's CPU time per text on documents, prompts and conversation turns.
    """
    import json
    import os

    from memlane.bench.injection import as_json, loso_command, markdown, run
    from memlane.bench.injection import train as fit
    from memlane.security.detect import CombinedDetector, Detector, RulesDetector

    if split not in ("dev", "val"):
        fail_run(f"--split must be dev or val, got {split!r}")
    if detector not in ("default", "rules"):
        fail_run(f"--detector must be default or rules, got {detector!r}")
    try:
        if cost:
            from memlane.bench.injection_cost import cost_table, docs_qa_corpora

            corpora = corpus if corpus else docs_qa_corpora(Path.cwd())
            table = cost_table(corpora, data, locomo, limit, command_line("injection"))
            out.print(table, highlight=False, markup=False)
            return
        if loso:
            out.print(loso_command(data, locomo, train, json_out), highlight=False, markup=False)
            return
        if train:
            model, choices = fit(data, locomo)
            for c in choices:
                err.print(f"C={c.c:g}: threshold {c.threshold:.4f}, val recall {c.recall:.3f}, val FPR {c.fpr:.3f}")
            err.print(model.info, highlight=False)
        chosen: Detector = CombinedDetector() if detector == "default" else RulesDetector()
        ev = run(data, locomo, "dev" if split == "dev" else "val", chosen)
    except (MemlaneError, OSError, ValueError, KeyError) as exc:
        fail_run(str(exc))
    load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    out.print(markdown(ev, command_line("injection"), load), highlight=False)
    if json_out is not None:
        json_out.write_text(json.dumps(as_json(ev), indent=2), encoding="utf-8")


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
            fail_run(str(exc))
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
        fail_run(str(exc))
    report.command = command_line("ablation")
    out.print("\n".join(render_ablation(report)), highlight=False)
    if json_out is not None:
        write_json(report, json_out)
        err.print(f"wrote {json_out}")


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
        fail_run(str(exc))
    if quick:
        evalset = evalset.first_scopes(1)
    run_labelled("memorybank", evalset, config_names, split, embedder, json_out)


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
                fail_run("--set locomo needs --data, the LoCoMo JSON file")
            evalset = load_dialogue_locomo(data)
        else:
            from memlane.bench.dialogue_original import FIXTURES, load_dialogue_original

            if which not in FIXTURES:
                fail_run(f"unknown --set {which!r}; choose locomo, {', '.join(FIXTURES)}")
            evalset = load_dialogue_original(FIXTURES[which])
    except MemlaneError as exc:
        fail_run(str(exc))
    if quick:
        evalset = evalset.first_scopes(1, max_queries=25)
    run_labelled("dialogue", evalset, config_names, split, embedder, json_out)


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
        fail_run(str(exc))
    if quick:
        evalset = evalset.first_scopes(1, max_queries=25)
    run_labelled("technical", evalset, config_names, split, embedder, json_out)
