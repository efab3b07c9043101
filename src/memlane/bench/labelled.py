"""Labelled retrieval sets beyond LoCoMo: one harness that ingests a set, answers its queries, and scores them.

A set is memories (each with a stable id, a user scope and a timestamp) and queries (each with the ids of the
memories that answer it and the split it belongs to). Every retrieval preset answers every query through the
public ``Memory`` API after one ingest; recall@1/5/10/20, nDCG@10 and MRR get 95% bootstrap confidence intervals
per split, and each preset is compared with the default by a paired bootstrap test over the same queries.
Queries labelled with no evidence are excluded from the scores but counted in the report.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from memlane.bench.common import NullTracker, Tracker, forget_queries, machine
from memlane.bench.embed_cache import warm_queries
from memlane.bench.locomo import (
    COMPARED_METRICS,
    Comparison,
    GroupScores,
    QuestionRow,
    comparison_table,
    group_scores,
)
from memlane.bench.metrics import count_tokens, paired_bootstrap_test, percentile
from memlane.config import DEFAULT_PRESET, PRESETS, Config, preset
from memlane.engine import Memory
from memlane.errors import ValidationError
from memlane.models import Hit, Message

#: ``holdout2`` to ``holdout4``: later held-out rounds, each written after the earlier rounds' results were known;
#: they may share split groups with ``holdout`` (all are held out), never with ``tune``.
LATER_ROUNDS: tuple[str, ...] = ("holdout2", "holdout3", "holdout4")
SPLITS: tuple[str, ...] = ("all", "tune", "holdout", *LATER_ROUNDS)
#: Metadata key that carries a memory's label id through ``Memory.add`` and back out of ``Memory.search``.
LABEL_KEY = "label_id"
#: Ids scored per query, and messages fetched to find them (the messages of one pair count once).
TOP_IDS = 20
TOP_K = 40


@dataclass(frozen=True)
class LabelledMemory:
    """One message to store: its label id, the user scope and session it is added to, and the message itself.

    Several messages may share a label id (the user query and assistant response of one labelled pair); a
    query's evidence names label ids, and a hit counts as its label id.
    """

    mid: str
    scope: str
    session: str
    role: str
    content: str
    timestamp: datetime
    name: str | None = None


@dataclass(frozen=True)
class LabelledQuery:
    """One query, searched within ``scope``: the label ids that answer it (empty: no evidence) and its split."""

    qid: str
    scope: str
    text: str
    evidence: tuple[str, ...]
    split: Literal["tune", "holdout", "holdout2", "holdout3", "holdout4"]
    kind: str = ""
    group: str = ""

    @property
    def split_group(self) -> str:
        """What the split divides: the query's ``group`` (e.g. the person it is about) or else its scope."""
        return self.group or self.scope


@dataclass
class LabelledSet:
    """Memories and queries of one evaluation set, already checked by ``validate``."""

    name: str
    description: str
    memories: list[LabelledMemory]
    queries: list[LabelledQuery]
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def validate(self) -> None:
        """Fail when a label points at no memory of the query's scope, a query id repeats, or a split group
        (a scope, or the query's ``group`` when it has one) has queries in both splits.
        """
        ids: dict[str, str] = {}
        for m in self.memories:
            if ids.setdefault(m.mid, m.scope) != m.scope:
                raise ValidationError(f"{self.name}: memory id {m.mid!r} is used in two scopes")
        qids: set[str] = set()
        split_of_group: dict[str, str] = {}
        for q in self.queries:
            if q.qid in qids:
                raise ValidationError(f"{self.name}: query id {q.qid!r} appears twice")
            qids.add(q.qid)
            for e in q.evidence:
                if e not in ids:
                    raise ValidationError(f"{self.name}: query {q.qid!r} is labelled with {e!r}, which is no memory")
                if ids[e] != q.scope:
                    raise ValidationError(f"{self.name}: query {q.qid!r} is labelled with {e!r} of another scope")
            side = "tune" if q.split == "tune" else "holdout"
            if split_of_group.setdefault(q.split_group, side) != side:
                raise ValidationError(f"{self.name}: {q.split_group!r} has queries in both splits")

    def select(self, split: str) -> LabelledSet:
        """The part of the set a split covers (``all``, ``tune`` or a held-out round): its queries and their scopes."""
        if split not in SPLITS:
            raise ValidationError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
        return self._with_queries([q for q in self.queries if split == "all" or q.split == split])

    def _with_queries(self, queries: list[LabelledQuery]) -> LabelledSet:
        """The set narrowed to ``queries`` and the memories of their scopes."""
        scopes = {q.scope for q in queries}
        return LabelledSet(
            name=self.name,
            description=self.description,
            memories=[m for m in self.memories if m.scope in scopes],
            queries=queries,
            source=self.source,
            notes=self.notes,
        )

    def first_scopes(self, per_split: int, *, max_queries: int | None = None) -> LabelledSet:
        """A small subset for smoke runs: the first ``per_split`` split groups (scopes, or the queries' groups)
        of each split, in query order, at most ``max_queries`` queries of each, and the memories of their scopes.
        """
        chosen: list[str] = []
        for split in ("tune", "holdout"):
            seen = list(dict.fromkeys(q.split_group for q in self.queries if q.split == split))
            chosen += seen[:per_split]
        keep = set(chosen)
        queries: list[LabelledQuery] = []
        per_group: dict[str, int] = {}
        for q in self.queries:
            if q.split_group in keep and per_group.get(q.split_group, 0) < (max_queries or len(self.queries)):
                per_group[q.split_group] = per_group.get(q.split_group, 0) + 1
                queries.append(q)
        return self._with_queries(queries)


# -- results ---------------------------------------------------------------------------------------------------------
class SetConfigResult(BaseModel):
    """One preset on one set: scores per split group, latency, and every answered query."""

    name: str
    description: str = ""
    is_default: bool = False
    groups: list[GroupScores]
    search_p50_ms: float
    search_p95_ms: float
    questions: list[QuestionRow] = Field(repr=False)

    def group(self, name: str) -> GroupScores:
        """The scores of one split group (``all``, ``tune`` or ``holdout``)."""
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(name)


class SetReport(BaseModel):
    """A run of one labelled set: what was ingested, each preset's results and their paired comparisons."""

    kind: Literal["evalset"] = "evalset"
    set_name: str
    description: str = ""
    source: str = ""
    command: str = ""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    split: str
    scopes: list[str]
    memories: int
    queries: int
    no_evidence: list[str] = Field(description="queries labelled with no evidence: counted, not scored")
    embedder: str
    machine: str
    ingest_items_per_s: float
    results: list[SetConfigResult]
    comparisons: list[Comparison] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _groups(split: str, rows: Sequence[QuestionRow], split_of: Mapping[str, str]) -> list[GroupScores]:
    names = ["tune", "holdout", *LATER_ROUNDS, "all"] if split == "all" else [split]
    out = []
    for name in names:
        chosen = [r for r in rows if name == "all" or split_of[r.qid] == name]
        if chosen:
            out.append(group_scores(name, chosen))
    return out


def compare_rows(baseline: SetConfigResult, other: SetConfigResult) -> list[Comparison]:
    """Paired bootstrap tests of ``other`` against ``baseline`` over the queries both answered."""
    base = {r.qid: r for r in baseline.questions}
    pairs = [(base[r.qid], r) for r in other.questions if r.qid in base]
    out = []
    for metric in COMPARED_METRICS:
        delta, low, high, p = paired_bootstrap_test(
            [a.metric(metric) for a, _ in pairs], [b.metric(metric) for _, b in pairs]
        )
        out.append(
            Comparison(
                baseline=baseline.name, config=other.name, metric=metric, delta=delta, low=low, high=high, p_value=p
            )
        )
    return out


def _ingest(memory: Memory, memories: Sequence[LabelledMemory], tracker: Tracker) -> None:
    """Add each (scope, session) as one call, in the order the set lists its memories."""
    batches: dict[tuple[str, str], list[Message]] = {}
    for m in memories:
        batches.setdefault((m.scope, m.session), []).append(
            Message(role=m.role, name=m.name, content=m.content, timestamp=m.timestamp, metadata={LABEL_KEY: m.mid})
        )
    for (scope, session), messages in batches.items():
        memory.add(messages, user_id=scope, session_id=session)
        tracker.advance(len(messages))


def _hit_ids(hits: Sequence[Hit]) -> tuple[list[str], list[str]]:
    """Label ids of the hits, best first, each id once (messages of one labelled pair share it), and their texts."""
    ids: list[str] = []
    texts: list[str] = []
    for h in hits:
        mem = h.memory
        label = mem.metadata.get(LABEL_KEY)
        key = str(label) if label is not None else f"memory:{mem.id}"
        if key not in ids:
            ids.append(key)
            texts.append(str(mem.text))
    return ids[:TOP_IDS], texts[:TOP_IDS]


def run_set(
    evalset: LabelledSet,
    *,
    presets: Sequence[str] | None = None,
    split: str = "all",
    embedder: str | None = None,
    tracker: Tracker | None = None,
) -> SetReport:
    """Ingest the chosen split of ``evalset`` once, then answer each of its queries with every preset."""
    track = tracker or NullTracker()
    evalset.validate()
    part = evalset.select(split)
    if not part.queries:
        raise ValidationError(f"{evalset.name}: split {split!r} has no queries")
    names = list(dict.fromkeys(preset(n).name for n in [*(presets or list(PRESETS)), DEFAULT_PRESET]))
    scored = [q for q in part.queries if q.evidence]
    split_of = {q.qid: q.split for q in scored}
    config = Config.from_env()
    with (
        tempfile.TemporaryDirectory(prefix="memlane-bench-") as tmp,
        Memory(Path(tmp) / f"{evalset.name}.db", embedder=embedder or config.embedder, config=config) as memory,
    ):
        memory.embedder.embed(["warm up the model before timing"])
        memory.embedder.embed_query("warm up")
        track.phase(f"{evalset.name}: ingesting", len(part.memories))
        start = time.perf_counter()
        _ingest(memory, part.memories, track)
        ingest_s = time.perf_counter() - start
        warm_queries(memory.embedder, (q.text for q in scored))
        results = []
        for name in names:
            forget_queries(memory.embedder)
            rows: list[QuestionRow] = []
            track.phase(f"{evalset.name}: queries ({name})", len(scored))
            for q in scored:
                t0 = time.perf_counter()
                hits = memory.search(q.text, user_id=q.scope, top_k=TOP_K, preset_name=name)
                latency = (time.perf_counter() - t0) * 1000
                ids, texts = _hit_ids(hits)
                rows.append(
                    QuestionRow(
                        qid=q.qid,
                        category=0,
                        evidence=list(q.evidence),
                        retrieved=ids,
                        tokens=[count_tokens(t) for t in texts],
                        latency_ms=latency,
                    )
                )
                track.advance()
            lat = [r.latency_ms for r in rows]
            results.append(
                SetConfigResult(
                    name=name,
                    description=preset(name).description,
                    is_default=name == DEFAULT_PRESET,
                    groups=_groups(split, rows, split_of),
                    search_p50_ms=percentile(lat, 0.5),
                    search_p95_ms=percentile(lat, 0.95),
                    questions=rows,
                )
            )
        identity = memory.embedder.identity
    default = next(r for r in results if r.is_default)
    return SetReport(
        set_name=evalset.name,
        description=evalset.description,
        source=evalset.source,
        split=split,
        scopes=sorted({q.scope for q in part.queries}),
        memories=len(part.memories),
        queries=len(part.queries),
        no_evidence=[q.qid for q in part.queries if not q.evidence],
        embedder=identity,
        machine=machine(),
        ingest_items_per_s=len(part.memories) / ingest_s if ingest_s > 0 else 0.0,
        results=results,
        comparisons=[c for r in results if r is not default for c in compare_rows(default, r)],
        notes=evalset.notes,
    )


# -- text ------------------------------------------------------------------------------------------------------------
def _ci(mean: float, low: float, high: float) -> str:
    return f"{mean:.3f} ({low:.3f}-{high:.3f})"


def set_quality_table(results: Sequence[SetConfigResult]) -> list[str]:
    """Markdown rows: recall@5/10, nDCG@10 and MRR with 95% CIs per preset and split group."""
    lines = [
        "| preset | split | n | R@5 (95% CI) | R@10 (95% CI) | nDCG@10 (95% CI) | MRR (95% CI) |",
        "|---|---|---|---|---|---|---|",
    ]
    for res in results:
        label = f"{res.name} (default)" if res.is_default else res.name
        for g in res.groups:
            r5, r10 = g.recall[5], g.recall[10]
            lines.append(
                f"| {label} | {g.name} | {g.questions} | {_ci(r5.mean, r5.low, r5.high)} | "
                f"{_ci(r10.mean, r10.low, r10.high)} | {_ci(g.ndcg10.mean, g.ndcg10.low, g.ndcg10.high)} | "
                f"{_ci(g.mrr.mean, g.mrr.low, g.mrr.high)} |"
            )
    return lines


def render_set_report(report: SetReport) -> str:
    """A Markdown summary of a run."""
    lines = [
        f"{report.set_name}: split `{report.split}`, {len(report.scopes)} scopes, {report.memories} memories, "
        f"{report.queries} queries ({len(report.no_evidence)} labelled with no evidence, not scored)",
        f"embedder `{report.embedder}`; {report.machine}; ingest {report.ingest_items_per_s:.0f} items/s",
        "",
        *set_quality_table(report.results),
        "",
        *comparison_table(report.comparisons),
        "",
        "| preset | search p50 ms | p95 ms |",
        "|---|---|---|",
    ]
    lines += [f"| {r.name} | {r.search_p50_ms:.1f} | {r.search_p95_ms:.1f} |" for r in report.results]
    return "\n".join(lines)
