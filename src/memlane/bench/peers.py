"""``memlane bench peers``: memlane against mem0, LanceDB, Chroma and a plain BM25 on the same data and queries.

For every system, in one run: recall@k (and the rest of the LoCoMo metrics) with each LoCoMo conversation in its
own user scope, and ingest throughput and search latency on corpora of 10k and 100k real conversation texts in one
user scope. Each (system, measurement) runs in a fresh process with the network guarded and telemetry off.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from memlane.bench.common import Tracker, current_rss_mb, dir_size_bytes, machine, peak_rss_mb, run_isolated
from memlane.bench.corpus import corpus, load_seeds, queries
from memlane.bench.locomo import (
    KS,
    Comparison,
    ConfigResult,
    QuestionRow,
    compare,
    config_result,
    load_conversations,
    question_row,
)
from memlane.bench.locomo_data import Turn
from memlane.bench.metrics import percentile
from memlane.bench.netguard import attempts, block_network
from memlane.bench.peer_systems import PACKAGES, SYSTEMS, available, build, build_setup, version
from memlane.bench.scale import ScalePoint, parse_max_sizes
from memlane.errors import ConfigError, MissingDependencyError

DEFAULT_SIZES: tuple[int, ...] = (10_000, 100_000)
QUICK_SYSTEMS: tuple[str, ...] = ("memlane", "bm25s")
ADD_BATCH = 500
WARMUP_QUERIES = 5
#: How a LoCoMo turn is given to every system: its bare text, or prefixed by speaker and session date as any user
#: of those systems would store it ("Caroline, 8 May 2023: ...").
TEXT_FORMS: tuple[str, ...] = ("bare", "dated")


def turn_text(turn: Turn, form: str) -> str:
    """The text of a turn as every system receives it under ``form``."""
    if form == "dated":
        return f"{turn.speaker}, {turn.timestamp.day} {turn.timestamp:%B %Y}: {turn.content}"
    return turn.content


class PeerInfo(BaseModel):
    """What a system is and how it was set up."""

    system: str
    package: str
    version: str
    setup: str
    network_attempts: list[str] = Field(default_factory=list)


class PeerQuality(BaseModel):
    """A system's LoCoMo results and ingest rate."""

    info: PeerInfo
    ingest_turns_per_s: float
    result: ConfigResult


class EmbeddingRate(BaseModel):
    """Texts per second of one MiniLM runtime on the same corpus texts (the model all vector systems use)."""

    runtime: str
    used_by: str
    texts_per_s: float


class PeersReport(BaseModel):
    """A full peers run."""

    kind: Literal["peers"] = "peers"
    command: str = ""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    machine: str
    data: str
    conversations: list[str]
    systems: list[PeerInfo]
    quality: list[PeerQuality]
    comparisons: list[Comparison]
    speed: list[ScalePoint]
    embedding_rates: list[EmbeddingRate] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    planned: list[str] = Field(default_factory=list, description="'system@size' speed points the run set out to do")
    text_form: str = Field("bare", description="How LoCoMo turns were given to every system (see TEXT_FORMS)")


@dataclass(frozen=True)
class PeerPlan:
    """Which systems and corpus sizes a peers run measures."""

    systems: tuple[str, ...]
    sizes: tuple[int, ...]
    max_sizes: dict[str, int] = field(default_factory=dict)
    queries: int = 200
    embedder: str | None = None
    quick: bool = False
    locomo: bool = True
    text_form: str = "bare"

    @classmethod
    def build(
        cls,
        *,
        systems: Sequence[str] | None = None,
        sizes: Sequence[int] | None = None,
        max_sizes: Sequence[str] | None = None,
        queries: int = 200,
        embedder: str | None = None,
        quick: bool = False,
        locomo: bool = True,
        text_form: str = "bare",
    ) -> PeerPlan:
        """A plan from CLI options.

        ``quick`` means one conversation, a 1,000-text corpus, 50 queries and, unless systems are named, memlane
        and the BM25 floor only (mem0 alone ingests a few texts per second).
        """
        chosen = tuple(systems or (QUICK_SYSTEMS if quick else SYSTEMS))
        unknown = sorted(set(chosen) - set(SYSTEMS))
        if unknown:
            raise ConfigError(f"unknown system(s) {unknown}; choose from {', '.join(SYSTEMS)}")
        if text_form not in TEXT_FORMS:
            raise ConfigError(f"unknown text form {text_form!r}; choose from {', '.join(TEXT_FORMS)}")
        if quick:
            sizes = sizes or (1_000,)
            queries = min(queries, 50)
        return cls(
            systems=chosen,
            sizes=tuple(sizes or DEFAULT_SIZES),
            max_sizes=parse_max_sizes(max_sizes),
            queries=queries,
            embedder=embedder,
            quick=quick,
            locomo=locomo,
            text_form=text_form,
        )


def _info(system: str, setup: str) -> PeerInfo:
    return PeerInfo(
        system=system,
        package="memlane" if system == "memlane" else PACKAGES[system],
        version=version(system),
        setup=setup,
        network_attempts=attempts(),
    )


def locomo_quality(
    data: Path, system: str, quick: bool, embedder: str | None, text_form: str = "bare", *, tracker: Tracker
) -> PeerQuality:
    """One system on LoCoMo (runs in a fresh process): each conversation in its own scope, every question."""
    block_network()
    convs = load_conversations(data, quick=quick)
    with tempfile.TemporaryDirectory(prefix=f"memlane-peer-{system}-") as tmp:
        sut = build(system, Path(tmp), embedder=embedder)
        n_turns = sum(len(c.turns) for c in convs)
        tracker.phase(f"peers: {system} LoCoMo ingest", n_turns)
        start = time.perf_counter()
        for conv in convs:
            sessions: dict[int, list[tuple[str, str]]] = {}
            for turn in conv.turns:
                sessions.setdefault(turn.session, []).append((turn.dia_id, turn_text(turn, text_form)))
            for _, turns in sorted(sessions.items()):
                sut.add(conv.conv_id, [t[0] for t in turns], [t[1] for t in turns])
                tracker.advance(len(turns))
        sut.finish()
        ingest_s = time.perf_counter() - start
        questions = [q for c in convs for q in c.questions]
        tracker.phase(f"peers: {system} LoCoMo questions", len(questions))
        rows: list[QuestionRow] = []
        for q in questions:
            t0 = time.perf_counter()
            found = sut.search(q.conv_id, q.question, max(KS))
            latency = (time.perf_counter() - t0) * 1000
            rows.append(question_row(q, [i for i, _ in found], [t for _, t in found], latency))
            tracker.advance()
        setup = sut.setup
        sut.close()
    return PeerQuality(
        info=_info(system, setup),
        ingest_turns_per_s=n_turns / ingest_s if ingest_s > 0 else 0.0,
        result=config_result(system, rows, description=setup, is_default=system == "memlane"),
    )


def point_embedder(system: str, embedder: str | None) -> str:
    """What embedded a system's texts: memlane, Chroma and LanceDB share memlane's embedder (``--embedder``); mem0
    always runs its own MiniLM; bm25s embeds nothing.
    """
    if system == "bm25s":
        return "none"
    if system == "mem0":
        return "minilm (its own)"
    return embedder or "minilm"


def speed_point(
    locomo: Path,
    memorybank: Path | None,
    system: str,
    size: int,
    n_queries: int,
    embedder: str | None,
    *,
    tracker: Tracker,
) -> ScalePoint:
    """Ingest ``size`` corpus texts into one scope, then time searches (runs in a fresh process)."""
    block_network()
    seeds = load_seeds(locomo, memorybank)
    texts = list(corpus(seeds, size))
    qs = queries(seeds, n_queries)
    baseline = current_rss_mb()
    with tempfile.TemporaryDirectory(prefix=f"memlane-peer-{system}-") as tmp:
        sut = build(system, Path(tmp), embedder=embedder)
        tracker.phase(f"peers: {system} {size:,} ingest", size)
        start = time.perf_counter()
        for b in range(0, size, ADD_BATCH):
            chunk = texts[b : b + ADD_BATCH]
            sut.add("user", [f"m{k}" for k in range(b, b + len(chunk))], chunk)
            tracker.advance(len(chunk))
        sut.finish()
        ingest_s = time.perf_counter() - start
        tracker.phase(f"peers: {system} {size:,} search", len(qs))
        for q in random.Random(3).sample(qs, min(WARMUP_QUERIES, len(qs))):
            sut.search("user", q, 10)
        forget = getattr(sut, "forget_queries", None)
        if callable(forget):  # the warm-up queries' vectors must not be cached when they are timed
            forget()
        lat = []
        for q in qs:
            t0 = time.perf_counter()
            sut.search("user", q, 10)
            lat.append((time.perf_counter() - t0) * 1000)
            tracker.advance()
        sut.close()
        disk = dir_size_bytes(Path(tmp))
    return ScalePoint(
        system=system,
        embedder=point_embedder(system, embedder),
        size=size,
        users=1,
        ingest_seconds=ingest_s,
        ingest_items_per_s=size / ingest_s if ingest_s > 0 else 0.0,
        queries=len(lat),
        search_p50_ms=percentile(lat, 0.50),
        search_p95_ms=percentile(lat, 0.95),
        search_p99_ms=percentile(lat, 0.99),
        peak_rss_mb=peak_rss_mb(),
        baseline_rss_mb=baseline,
        disk_bytes=disk,
        note=", ".join(attempts()),
    )


def embedding_rates(locomo: Path, memorybank: Path | None, n: int, *, tracker: Tracker) -> list[EmbeddingRate]:
    """Texts/s of memlane's MiniLM runtime and of sentence-transformers (what mem0 runs) on the same texts."""
    block_network()
    from memlane.embedding import make_embedder
    from memlane.embedding._common import minilm_dir

    texts = list(corpus(load_seeds(locomo, memorybank), n))
    tracker.phase("peers: embedding runtimes", 2)
    ours = make_embedder("minilm")
    ours.embed(["warm up"])
    t0 = time.perf_counter()
    for b in range(0, n, 64):
        ours.embed(texts[b : b + 64])
    runtime = getattr(getattr(ours, "inner", ours), "runtime", None) or "?"
    rates = [EmbeddingRate(runtime=f"memlane MiniLM ({runtime})", used_by="memlane, Chroma, LanceDB",
                           texts_per_s=n / (time.perf_counter() - t0))]  # fmt: skip
    tracker.advance()
    if available("mem0"):
        st = __import__("sentence_transformers").SentenceTransformer(str(minilm_dir()), device="cpu")
        st.encode(["warm up"])
        t0 = time.perf_counter()
        for text in texts:  # mem0 embeds one message per add call
            st.encode(text)
        rates.append(EmbeddingRate(runtime="sentence-transformers (torch), one text per call", used_by="mem0",
                                   texts_per_s=n / (time.perf_counter() - t0)))  # fmt: skip
    tracker.advance()
    return rates


def run_peers(
    locomo: Path,
    memorybank: Path | None,
    plan: PeerPlan,
    *,
    tracker: Tracker,
    on_update: Callable[[PeersReport], None] | None = None,
) -> PeersReport:
    """Every system of ``plan`` on LoCoMo and at every corpus size, each in its own process.

    ``on_update`` sees the report after each measurement, so that an interrupted run keeps what it measured.
    """
    convs = load_conversations(locomo, quick=plan.quick)
    report = PeersReport(
        machine=machine(), data=str(locomo), conversations=[c.conv_id for c in convs] if plan.locomo else [],
        systems=[], quality=[], comparisons=[], speed=[], text_form=plan.text_form,
    )  # fmt: skip

    def update() -> None:
        if on_update is not None:
            on_update(report)

    systems = []
    for s in plan.systems:
        if available(s):
            systems.append(s)
        else:
            report.skipped.append(f"{s}: {MissingDependencyError(f'the {s} peer benchmark', 'bench')}")
    for size in plan.sizes:
        for s in systems:
            cap = plan.max_sizes.get(s)
            if cap is not None and size > cap:
                report.skipped.append(f"{s} at {size:,}: not measured (--max-size {s}={cap})")
            else:
                report.planned.append(f"{s}@{size}")
    if plan.locomo:
        for s in systems:
            q = run_isolated(locomo_quality, locomo, s, plan.quick, plan.embedder, plan.text_form, tracker=tracker)
            report.quality.append(q)
            report.systems.append(q.info)
            base = next((x.result for x in report.quality if x.info.system == "memlane"), None)
            report.comparisons = [
                c for x in report.quality if base is not None and x.result is not base for c in compare(base, x.result)
            ]
            update()
    for size in plan.sizes:
        for s in systems:
            if f"{s}@{size}" in report.planned:
                report.speed.append(
                    run_isolated(speed_point, locomo, memorybank, s, size, plan.queries, plan.embedder, tracker=tracker)
                )
                update()
    if not plan.locomo:
        report.systems = [_info(s, build_setup(s)) for s in systems]
    if {"chroma", "lancedb", "mem0"} & set(systems):
        report.embedding_rates = run_isolated(
            embedding_rates, locomo, memorybank, 200 if plan.quick else 2000, tracker=tracker
        )
        update()
    return report


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3g}" if b else "-"


def quality_rows(report: PeersReport) -> list[str]:
    """Markdown: recall@k, nDCG@10, MRR and tokens per system over categories 1-4, with memlane/peer for R@10."""
    base = next((q for q in report.quality if q.info.system == "memlane"), None)
    lines = [
        "| system | version | R@1 | R@5 | R@10 (95% CI) | R@20 | nDCG@10 | MRR | tokens top-10 | ingest turns/s | "
        "memlane/peer R@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for q in report.quality:
        g = q.result.overall
        r = g.recall
        ratio = _ratio(base.result.overall.recall[10].mean, r[10].mean) if base else "-"
        lines.append(
            f"| {q.info.system} | {q.info.version} | {r[1].mean:.3f} | {r[5].mean:.3f} | {r[10].mean:.3f} "
            f"({r[10].low:.3f}-{r[10].high:.3f}) | {r[20].mean:.3f} | {g.ndcg10.mean:.3f} | {g.mrr.mean:.3f} | "
            f"{g.tokens[10]:.0f} | {q.ingest_turns_per_s:,.0f} | {ratio} |"
        )
    return lines


def speed_rows(report: PeersReport) -> list[str]:
    """Markdown: ingest items/s and search p50/p95 per system and size, with memlane/peer ratios."""
    ours = {p.size: p for p in report.speed if p.system == "memlane"}
    lines = [
        "| system | memories | ingest items/s | search p50 ms | p95 ms | peak RSS MiB | on disk MiB | "
        "memlane/peer ingest | memlane/peer p50 | memlane/peer p95 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in sorted(report.speed, key=lambda p: (p.size, SYSTEMS.index(p.system))):
        m = ours.get(p.size)
        lines.append(
            f"| {p.system} | {p.size:,} | {p.ingest_items_per_s:,.0f} | {p.search_p50_ms:.2f} | {p.search_p95_ms:.2f} | "
            f"{p.peak_rss_mb:,.0f} | {p.disk_bytes / 2**20:,.1f} | "
            f"{_ratio(m.ingest_items_per_s, p.ingest_items_per_s) if m else '-'} | "
            f"{_ratio(m.search_p50_ms, p.search_p50_ms) if m else '-'} | "
            f"{_ratio(m.search_p95_ms, p.search_p95_ms) if m else '-'} |"
        )
    return lines


def render_peers(report: PeersReport) -> str:
    """A Markdown summary of a peers run."""
    head = (
        f"peers on {report.machine}; LoCoMo {', '.join(report.conversations)}; turns given as {report.text_form!r} text"
    )
    lines = [head, "", *quality_rows(report), ""]
    lines += [*speed_rows(report), ""]
    lines += [f"- {r.runtime} ({r.used_by}): {r.texts_per_s:,.0f} texts/s" for r in report.embedding_rates]
    lines += [f"- skipped {s}" for s in report.skipped]
    lines += [f"- not measured: {m} (the run stopped before it)" for m in missing(report)]
    return "\n".join(lines)


def missing(report: PeersReport) -> list[str]:
    """Planned speed points the report has no result for (the run was stopped before them)."""
    done = {f"{p.system}@{p.size}" for p in report.speed}
    return [m for m in report.planned if m not in done]
