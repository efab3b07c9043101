"""``memlane bench locomo``: turn-level retrieval quality on LoCoMo, measured through the public ``Memory`` API.

Every configuration (a named retrieval preset) answers every question of the chosen conversations from one ingest.
Per LoCoMo category and over categories 1-4 it reports recall@1/5/10/20, nDCG@10 and MRR with 95% bootstrap
confidence intervals, the mean number of tokens the top-k returns, and search latency; each configuration is
compared with the default by a paired bootstrap test over the same questions.
"""

from __future__ import annotations

import gzip
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from memlane.bench.common import NullTracker, Tracker, forget_queries, machine
from memlane.bench.embed_cache import warm_queries
from memlane.bench.locomo_data import (
    CATEGORY_NAMES,
    LocomoConversation,
    Question,
    load_locomo,
    select_split,
)
from memlane.bench.metrics import (
    bootstrap_mean,
    count_tokens,
    ndcg_at_k,
    paired_bootstrap_test,
    percentile,
    recall_at_k,
    reciprocal_rank,
)
from memlane.config import DEFAULT_PRESET, PRESETS, Config, preset
from memlane.engine import Memory
from memlane.errors import ValidationError
from memlane.models import Message

KS: tuple[int, ...] = (1, 5, 10, 20)
#: Categories pooled into the "overall" figures (5, adversarial, has no answer to retrieve).
OVERALL_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
OVERALL_NAME = "overall 1-4"
#: The conversation ``--quick`` runs use (the smallest of the dev file).
QUICK_CONVERSATION = "conv-30"
#: Metrics a paired bootstrap compares between configurations.
COMPARED_METRICS: tuple[str, ...] = ("recall@10", "ndcg@10", "mrr")


class Estimate(BaseModel):
    """A mean and its 95% percentile-bootstrap confidence interval."""

    mean: float
    low: float
    high: float


class QuestionRow(BaseModel):
    """One question as answered by one configuration: the ids retrieved, their token counts, the latency."""

    qid: str
    category: int
    evidence: list[str]
    retrieved: list[str]
    tokens: list[int]
    latency_ms: float

    def metric(self, name: str) -> float:
        """``recall@K``, ``ndcg@10`` or ``mrr`` of this question."""
        if name == "mrr":
            return reciprocal_rank(self.retrieved, self.evidence)
        kind, _, k = name.partition("@")
        if kind == "recall":
            return recall_at_k(self.retrieved, self.evidence, int(k))
        if kind == "ndcg":
            return ndcg_at_k(self.retrieved, self.evidence, int(k))
        raise ValueError(f"unknown metric {name!r}")

    def tokens_at(self, k: int) -> int:
        """Tokens of the first ``k`` texts returned."""
        return sum(self.tokens[:k])


class GroupScores(BaseModel):
    """The metrics of one category (or of categories 1-4) for one configuration."""

    name: str
    questions: int
    recall: dict[int, Estimate]
    ndcg10: Estimate
    mrr: Estimate
    tokens: dict[int, float] = Field(description="mean tokens of the top-k texts returned")


class Comparison(BaseModel):
    """Paired bootstrap of ``config`` against ``baseline`` on one metric over categories 1-4."""

    baseline: str
    config: str
    metric: str
    delta: float
    low: float
    high: float
    p_value: float


class ConfigResult(BaseModel):
    """Everything measured for one system configuration on LoCoMo."""

    name: str
    description: str = ""
    is_default: bool = False
    categories: list[GroupScores]
    overall: GroupScores
    search_p50_ms: float
    search_p95_ms: float
    search_p99_ms: float
    questions: list[QuestionRow] = Field(repr=False)


class LocomoReport(BaseModel):
    """A full LoCoMo run: data, machine, ingest speed, each configuration's results and their comparisons."""

    kind: Literal["locomo"] = "locomo"
    command: str = ""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    data: str
    split: str
    conversations: list[str]
    turns: int
    embedder: str
    machine: str
    ingest_turns_per_s: float
    results: list[ConfigResult]
    comparisons: list[Comparison] = Field(default_factory=list)


# -- scoring (shared with the peers harness) -------------------------------------------------------------------------
def question_row(q: Question, retrieved: Sequence[str], texts: Sequence[str], latency_ms: float) -> QuestionRow:
    """The row of one answered question (``retrieved`` ids and their ``texts``, best first)."""
    return QuestionRow(
        qid=q.qid,
        category=q.category,
        evidence=list(q.evidence),
        retrieved=list(retrieved),
        tokens=[count_tokens(t) for t in texts],
        latency_ms=latency_ms,
    )


def group_scores(name: str, rows: Sequence[QuestionRow], *, resamples: int = 2000) -> GroupScores:
    """Means and bootstrap CIs of a set of questions."""

    def est(metric: str) -> Estimate:
        mean, low, high = bootstrap_mean([r.metric(metric) for r in rows], resamples=resamples)
        return Estimate(mean=mean, low=low, high=high)

    n = len(rows)
    return GroupScores(
        name=name,
        questions=n,
        recall={k: est(f"recall@{k}") for k in KS},
        ndcg10=est("ndcg@10"),
        mrr=est("mrr"),
        tokens={k: (sum(r.tokens_at(k) for r in rows) / n if n else 0.0) for k in KS},
    )


def config_result(
    name: str, rows: Sequence[QuestionRow], *, description: str = "", is_default: bool = False
) -> ConfigResult:
    """Scores per category and over categories 1-4, and latency percentiles, of one configuration."""
    lat = [r.latency_ms for r in rows]
    cats = [group_scores(CATEGORY_NAMES[c], [r for r in rows if r.category == c]) for c in sorted(CATEGORY_NAMES)]
    return ConfigResult(
        name=name,
        description=description,
        is_default=is_default,
        categories=cats,
        overall=group_scores(OVERALL_NAME, [r for r in rows if r.category in OVERALL_CATEGORIES]),
        search_p50_ms=percentile(lat, 0.50),
        search_p95_ms=percentile(lat, 0.95),
        search_p99_ms=percentile(lat, 0.99),
        questions=list(rows),
    )


def compare(baseline: ConfigResult, other: ConfigResult, *, resamples: int = 2000) -> list[Comparison]:
    """Paired bootstrap tests of ``other`` against ``baseline`` over the questions of categories 1-4 both answered."""
    base = {r.qid: r for r in baseline.questions if r.category in OVERALL_CATEGORIES}
    pairs = [(base[r.qid], r) for r in other.questions if r.qid in base]
    out = []
    for metric in COMPARED_METRICS:
        delta, low, high, p = paired_bootstrap_test(
            [a.metric(metric) for a, _ in pairs], [b.metric(metric) for _, b in pairs], resamples=resamples
        )
        out.append(
            Comparison(
                baseline=baseline.name, config=other.name, metric=metric, delta=delta, low=low, high=high, p_value=p
            )
        )
    return out


def comparisons_against(results: Sequence[ConfigResult], baseline_name: str) -> list[Comparison]:
    """Every configuration compared with the one called ``baseline_name``."""
    base = next((r for r in results if r.name == baseline_name), None)
    if base is None:
        return []
    return [c for r in results if r is not base for c in compare(base, r)]


# -- the memlane run -------------------------------------------------------------------------------------------------
def default_configs() -> list[str]:
    """BM25 alone, dense alone, every fusion preset, and the default (which names one of them)."""
    return list(PRESETS)


def ingest_conversation(memory: Memory, conv: LocomoConversation) -> None:
    """Add a conversation session by session into the user scope named after it, keeping each turn's dia_id."""
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


def load_conversations(
    data: Path, *, split: str = "all", limit: int | None = None, quick: bool = False
) -> list[LocomoConversation]:
    """The conversations a run uses: a split, optionally the first ``limit``, or the one ``quick`` conversation."""
    convs = select_split(load_locomo(data).conversations, split)
    if quick:
        convs = [c for c in convs if c.conv_id == QUICK_CONVERSATION] or convs[:1]
    if limit is not None:
        convs = convs[:limit]
    return convs


def run_locomo(
    data: Path,
    *,
    presets: Sequence[str] | None = None,
    split: str = "all",
    embedder: str | None = None,
    limit: int | None = None,
    quick: bool = False,
    tracker: Tracker | None = None,
    progress: Callable[[], object] | None = None,
    store: str | None = None,
) -> LocomoReport:
    """Ingest each conversation into its own user scope, then answer every question with every configuration.

    ``store`` is where (a store URL, e.g. ``postgresql://...``; it must hold no memories), instead of a temporary
    SQLite file.

    ``presets`` are retrieval preset names (``None``: all of them); the default preset is always measured and
    every other configuration is compared with it. ``progress`` is accepted for compatibility and ignored: pass
    a ``tracker``.
    """
    del progress
    track = tracker or NullTracker()
    convs = load_conversations(data, split=split, limit=limit, quick=quick)
    names = list(dict.fromkeys([*(presets or default_configs()), DEFAULT_PRESET]))
    names = [preset(n).name for n in names]  # resolves "default" and fails early on a typo
    names = list(dict.fromkeys(names))
    config = Config.from_env()
    n_turns = sum(len(c.turns) for c in convs)
    questions = [q for c in convs for q in c.questions]
    with (
        tempfile.TemporaryDirectory(prefix="memlane-bench-") as tmp,
        Memory(store or Path(tmp) / "locomo.db", embedder=embedder or config.embedder, config=config) as memory,
    ):
        held = memory.stats()
        if held.memories:
            raise ValidationError(f"the bench store {held.path} must be empty; it holds {held.memories} memories")
        memory.embedder.embed(["warm up the model before timing"])
        memory.embedder.embed_query("warm up")
        track.phase("LoCoMo: ingesting turns", n_turns)
        start = time.perf_counter()
        for conv in convs:
            ingest_conversation(memory, conv)
            track.advance(len(conv.turns))
        ingest_s = time.perf_counter() - start
        warm_queries(memory.embedder, (q.question for q in questions))
        results = []
        for name in names:
            forget_queries(memory.embedder)
            rows: list[QuestionRow] = []
            track.phase(f"LoCoMo: questions ({name})", len(questions))
            for q in questions:
                t0 = time.perf_counter()
                hits = memory.search(q.question, user_id=q.conv_id, top_k=max(KS), preset_name=name)
                latency = (time.perf_counter() - t0) * 1000
                rows.append(
                    question_row(
                        q, [str(h.memory.metadata.get("dia_id")) for h in hits], [h.memory.text for h in hits], latency
                    )
                )
                track.advance()
            results.append(
                config_result(name, rows, description=preset(name).description, is_default=name == DEFAULT_PRESET)
            )
        identity = memory.embedder.identity
    return LocomoReport(
        data=str(data),
        split="quick" if quick else split,
        conversations=[c.conv_id for c in convs],
        turns=n_turns,
        embedder=identity,
        machine=machine(),
        ingest_turns_per_s=n_turns / ingest_s if ingest_s > 0 else 0.0,
        results=results,
        comparisons=comparisons_against(results, DEFAULT_PRESET),
    )


# -- JSON and text ---------------------------------------------------------------------------------------------------
def write_json(model: BaseModel, path: Path) -> None:
    """Write a result as JSON, gzipped when ``path`` ends with ``.gz``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = model.model_dump_json(indent=None if path.suffix == ".gz" else 1)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(text)
    else:
        path.write_text(text + "\n", encoding="utf-8")


def read_text(path: Path) -> str:
    """The text of a result file, gunzipped when it ends with ``.gz``."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read()
    return path.read_text(encoding="utf-8")


def _ci(e: Estimate) -> str:
    return f"{e.mean:.3f} ({e.low:.3f}-{e.high:.3f})"


def quality_table(results: Sequence[ConfigResult], *, groups: Literal["overall", "all"] = "all") -> list[str]:
    """Markdown rows: recall@k, nDCG@10, MRR (with 95% CIs) and tokens of the top 10 per configuration and group."""
    lines = [
        "| config | category | n | R@1 | R@5 | R@10 (95% CI) | R@20 | nDCG@10 (95% CI) | MRR (95% CI) | tokens top-10 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        label = f"{res.name} (default)" if res.is_default else res.name
        cats = [res.overall] if groups == "overall" else [*res.categories, res.overall]
        for g in cats:
            r = g.recall
            lines.append(
                f"| {label} | {g.name} | {g.questions} | {r[1].mean:.3f} | {r[5].mean:.3f} | {_ci(r[10])} | "
                f"{r[20].mean:.3f} | {_ci(g.ndcg10)} | {_ci(g.mrr)} | {g.tokens[10]:.0f} |"
            )
    return lines


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def comparison_table(comparisons: Sequence[Comparison]) -> list[str]:
    """Markdown rows of paired bootstrap tests."""
    lines = [
        "| config | vs | metric | delta | 95% CI | p |",
        "|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        lines.append(
            f"| {c.config} | {c.baseline} | {c.metric} | {c.delta:+.3f} | {c.low:+.3f} to {c.high:+.3f} | "
            f"{_p(c.p_value)} |"
        )
    return lines


def render_report(report: LocomoReport) -> str:
    """A Markdown summary of a run (the CLI prints it; ``bench report`` builds the docs from the JSON)."""
    lines = [
        f"LoCoMo turn-level retrieval, split `{report.split}` ({', '.join(report.conversations)}; {report.turns} turns)",
        f"embedder `{report.embedder}`; {report.machine}; ingest {report.ingest_turns_per_s:.0f} turns/s",
        "",
        *quality_table(report.results),
        "",
        *comparison_table(report.comparisons),
        "",
        "| config | search p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r.name} | {r.search_p50_ms:.1f} | {r.search_p95_ms:.1f} | {r.search_p99_ms:.1f} |" for r in report.results
    ]
    return "\n".join(lines)
