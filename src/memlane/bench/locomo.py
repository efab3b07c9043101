"""``memlane bench locomo``: turn-level retrieval on LoCoMo, measured through the public ``Memory`` API."""

from __future__ import annotations

import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field
from rich.progress import Progress

from memlane.bench.locomo_data import (
    CATEGORY_NAMES,
    LocomoConversation,
    load_locomo,
    select_split,
)
from memlane.bench.metrics import bootstrap_ci, recall_at_k
from memlane.config import Config, preset
from memlane.engine import Memory
from memlane.models import Message

KS: tuple[int, ...] = (1, 5, 10, 20)


class QuestionResult(BaseModel):
    """One question: what was retrieved and how much of the evidence it covered."""

    qid: str
    conv_id: str
    category: int
    evidence: list[str]
    retrieved: list[str]
    recall: dict[int, float]
    latency_ms: float


class CategorySummary(BaseModel):
    """Mean recall@k over one category (or over categories 1-4), with a 95% CI for recall@10."""

    name: str
    questions: int
    recall: dict[int, float]
    recall10_ci: tuple[float, float]


class PresetResult(BaseModel):
    """Everything measured for one retrieval preset."""

    preset: str
    categories: list[CategorySummary]
    overall: CategorySummary
    search_p50_ms: float
    search_p95_ms: float
    questions: list[QuestionResult] = Field(repr=False)


class LocomoReport(BaseModel):
    """A full run: data, machine, ingest speed and each preset's results."""

    data: str
    split: str
    conversations: list[str]
    turns: int
    embedder: str
    machine: str
    ingest_turns_per_s: float
    results: list[PresetResult]


def _machine() -> str:
    import os

    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _ingest(memory: Memory, conv: LocomoConversation) -> None:
    by_session: dict[int, list[Message]] = {}
    for turn in conv.turns:
        by_session.setdefault(turn.session, []).append(
            Message(
                role="user",
                name=turn.speaker,
                content=turn.content,
                timestamp=turn.timestamp,
                metadata={"dia_id": turn.dia_id},
            )
        )
    for session, messages in sorted(by_session.items()):
        memory.add(messages, user_id=conv.conv_id, session_id=f"session_{session}")


def _summarise(name: str, rows: Sequence[QuestionResult]) -> CategorySummary:
    recall = {k: (statistics.fmean(r.recall[k] for r in rows) if rows else 0.0) for k in KS}
    if rows:
        _, lo, hi = bootstrap_ci([r.recall[10] for r in rows])
    else:
        lo = hi = 0.0
    return CategorySummary(name=name, questions=len(rows), recall=recall, recall10_ci=(lo, hi))


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


def run_locomo(
    data: Path,
    *,
    presets: Sequence[str] = ("default",),
    split: str = "all",
    embedder: str | None = None,
    limit: int | None = None,
    progress: Callable[[], Progress] | None = None,
) -> LocomoReport:
    """Ingest each conversation into its own user scope, then run every question with every preset."""
    dataset = load_locomo(data)
    convs = select_split(dataset.conversations, split)
    if limit is not None:
        convs = convs[:limit]
    for name in presets:
        preset(name)  # fail early on a typo
    config = Config.from_env()
    with (
        tempfile.TemporaryDirectory(prefix="memlane-bench-") as tmp,
        Memory(Path(tmp) / "locomo.db", embedder=embedder or config.embedder, config=config) as memory,
    ):
        memory.embedder.embed(["warm up the model before timing"])
        memory.embedder.embed_query("warm up")
        bar = progress() if progress else None
        n_turns = sum(len(c.turns) for c in convs)
        start = time.perf_counter()
        if bar:
            bar.start()
            task = bar.add_task("ingesting turns", total=n_turns)
        for conv in convs:
            _ingest(memory, conv)
            if bar:
                bar.advance(task, len(conv.turns))
        ingest_s = time.perf_counter() - start
        results = []
        questions = [q for c in convs for q in c.questions]
        for name in presets:
            rows: list[QuestionResult] = []
            if bar:
                qtask = bar.add_task(f"questions ({name})", total=len(questions))
            for q in questions:
                t0 = time.perf_counter()
                hits = memory.search(q.question, user_id=q.conv_id, top_k=max(KS), preset_name=name)
                latency = (time.perf_counter() - t0) * 1000
                retrieved = [str(h.memory.metadata.get("dia_id")) for h in hits]
                rows.append(
                    QuestionResult(
                        qid=q.qid,
                        conv_id=q.conv_id,
                        category=q.category,
                        evidence=list(q.evidence),
                        retrieved=retrieved,
                        recall={k: recall_at_k(retrieved, q.evidence, k) for k in KS},
                        latency_ms=latency,
                    )
                )
                if bar:
                    bar.advance(qtask)
            cats = [_summarise(CATEGORY_NAMES[c], [r for r in rows if r.category == c]) for c in sorted(CATEGORY_NAMES)]
            lat = [r.latency_ms for r in rows]
            results.append(
                PresetResult(
                    preset=preset(name).name if name == "default" else name,
                    categories=cats,
                    overall=_summarise("overall 1-4", [r for r in rows if r.category in (1, 2, 3, 4)]),
                    search_p50_ms=_percentile(lat, 0.5),
                    search_p95_ms=_percentile(lat, 0.95),
                    questions=rows,
                )
            )
        if bar:
            bar.stop()
        identity = memory.embedder.identity
    return LocomoReport(
        data=str(data),
        split=split,
        conversations=[c.conv_id for c in convs],
        turns=n_turns,
        embedder=identity,
        machine=_machine(),
        ingest_turns_per_s=n_turns / ingest_s if ingest_s > 0 else 0.0,
        results=results,
    )


def render_report(report: LocomoReport) -> str:
    """A Markdown table of a report (the form used in docs/benchmarks.md)."""
    lines = [
        f"LoCoMo turn-level retrieval, split `{report.split}` ({', '.join(report.conversations)}; {report.turns} turns)",
        f"embedder `{report.embedder}`; {report.machine}; ingest {report.ingest_turns_per_s:.0f} turns/s",
        "",
        "| preset | category | questions | R@1 | R@5 | R@10 | R@20 | R@10 95% CI |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for res in report.results:
        for cat in [*res.categories, res.overall]:
            r = cat.recall
            lo, hi = cat.recall10_ci
            lines.append(
                f"| {res.preset} | {cat.name} | {cat.questions} | {r[1]:.3f} | {r[5]:.3f} | {r[10]:.3f} | "
                f"{r[20]:.3f} | {lo:.3f}-{hi:.3f} |"
            )
    lines += ["", "| preset | search p50 ms | search p95 ms |", "|---|---|---|"]
    lines += [f"| {r.preset} | {r.search_p50_ms:.1f} | {r.search_p95_ms:.1f} |" for r in report.results]
    return "\n".join(lines)
