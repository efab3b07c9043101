"""What the inspector's pages show, read through the public ``Memory`` API on a worker thread.

Every page is bounded: the timeline reads one page of rows, filtered by the store and paged by a cursor
(``Memory.timeline``), so a deep page or a filter costs about what the first page costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memlane.engine import Memory
from memlane.errors import NotFoundError
from memlane.models import (
    HistoryEntry,
    Hit,
    InjectionFlag,
    Job,
    MemoryItem,
    MemoryKind,
    utcnow,
)
from memlane.records.timeline import TimelineFilter
from memlane.retrieval.query import analyse_query
from memlane.retrieval.shape import query_shape

PAGE = 50


@dataclass(frozen=True)
class TimelineQuery:
    """The timeline's filters and position (``after``: the cursor the previous page ended at)."""

    kind: str = ""
    category: str = ""
    entity: str = ""
    validity: str = "current"  # current | all
    flag: str = "any"  # any | flagged
    after: str = ""

    def where(self) -> TimelineFilter:
        return TimelineFilter(
            kind=MemoryKind(self.kind) if self.kind else None,
            category=self.category.strip() or None,
            entity=self.entity.strip() or None,
            include_superseded=self.validity == "all",
            flagged_only=self.flag == "flagged",
        )


@dataclass
class TimelineView:
    """One page of the timeline, the flags of its memories, and the cursor of the next page."""

    items: list[MemoryItem]
    flags: dict[str, InjectionFlag]
    next_after: str | None


def timeline(m: Memory, user_id: str, tenant: str, q: TimelineQuery) -> TimelineView:
    """One page of a user's memories, newest first by event time, filtered in the store, with their flags."""
    page = m.timeline(user_id=user_id, tenant=tenant, where=q.where(), limit=PAGE, after=q.after or None)
    nxt = page.next.encode() if page.next is not None else None
    return TimelineView(page.items, _flags(m, user_id, tenant, page.items), nxt)


def _flags(m: Memory, user_id: str, tenant: str, items: list[MemoryItem]) -> dict[str, InjectionFlag]:
    return m.flags([it.id for it in items], user_id=user_id, tenant=tenant) if items else {}


@dataclass
class Dimension:
    """One dimension of the preset: its weight and whether (and why) the query engaged it."""

    name: str
    weight: float
    why: str


@dataclass
class Analysis:
    """What the query looked like to the read path."""

    shape: str
    terms: list[str]
    exact_terms: list[str]
    entities: list[str]
    time: str
    wants_time: bool
    counting: bool
    preset: str
    dimensions: list[Dimension]


@dataclass
class SearchPage:
    """Hits with their breakdowns and flags, and the query analysis."""

    hits: list[Hit]
    flags: dict[str, InjectionFlag]
    analysis: Analysis
    top: float  # the largest contribution of any dimension of any hit (the bars' scale)


def search(m: Memory, user_id: str, tenant: str, query: str, preset: str | None, top_k: int) -> SearchPage:
    """Run the search and explain it: each hit's breakdown, and the query analysis with why dimensions engaged."""
    hits = m.search(query, user_id=user_id, tenant=tenant, top_k=top_k, preset_name=preset or None)
    chosen = m.config.preset_for(preset or None)
    features = analyse_query(query, utcnow())
    shape = query_shape(query)
    engaged: dict[str, str] = {}
    for h in hits:
        for dim, why in h.triggers.items():
            engaged.setdefault(dim, why)
    dims = []
    for name, weight in sorted(chosen.fusion.weights.items(), key=lambda kv: -kv[1]):
        why = engaged.get(name) or _idle_reason(name, features.time_range is not None or features.wants_time)
        dims.append(Dimension(name, weight, why))
    span = features.time_range
    analysis = Analysis(
        shape=shape.describe()
        if shape.turns >= 2 or shape.words > 40
        else _plain_shape(shape.words, shape.is_question),
        terms=features.terms,
        exact_terms=features.exact_terms,
        entities=features.entity_keys,
        time="" if span is None else f"{span.text!r}: {_day(span.start)} to {_day(span.end)}",
        wants_time=features.wants_time,
        counting=features.is_counting,
        preset=preset or m.config.preset,
        dimensions=dims,
    )
    ids = [h.memory.id for h in hits]
    flags = m.flags(ids, user_id=user_id, tenant=tenant) if ids else {}
    top = max((abs(b.contribution) for h in hits for b in h.breakdown.values()), default=0.0)
    return SearchPage(hits, flags, analysis, top or 1.0)


def _plain_shape(words: int, question: bool) -> str:
    return f"{'a question' if question else 'a statement'} of {words} word{'s' if words != 1 else ''}"


def _idle_reason(dim: str, timed: bool) -> str:
    if dim == "entity":
        return "not engaged: the query names none of this user's entities"
    if dim == "temporal" and not timed:
        return "not engaged: the query names no time and does not ask when"
    return "no hit drew on it"


def _day(t: datetime) -> str:
    return "…" if t.year <= 1 or t.year >= 9999 else t.date().isoformat()


@dataclass
class MemoryPage:
    """A memory with its history, flag, source turns and the memory that replaced it."""

    item: MemoryItem
    history: list[HistoryEntry]
    flag: InjectionFlag | None
    sources: list[MemoryItem]
    superseding: MemoryItem | None


def memory_page(m: Memory, user_id: str, tenant: str, memory_id: str) -> MemoryPage:
    """Everything the memory page shows."""
    item = m.get(memory_id, user_id=user_id, tenant=tenant)
    history = m.history(memory_id, user_id=user_id, tenant=tenant)
    flag = m.flags([memory_id], user_id=user_id, tenant=tenant).get(memory_id)
    sources = []
    for ref in item.sources[:50]:
        if ref.memory_id == item.id:
            continue
        try:
            sources.append(m.get(ref.memory_id, user_id=user_id, tenant=tenant))
        except NotFoundError:
            continue  # a source deleted since
    superseding = None
    if item.superseded_by:
        try:
            superseding = m.get(item.superseded_by, user_id=user_id, tenant=tenant)
        except NotFoundError:
            superseding = None
    return MemoryPage(item, history, flag, sources, superseding)


@dataclass
class JobPage:
    """A job, the turns it read and the typed memories it wrote (``Memory.job_result``), with their flags."""

    job: Job
    messages: list[MemoryItem]
    written: list[MemoryItem]
    flags: dict[str, InjectionFlag]


def job_page(m: Memory, user_id: str, tenant: str, job_id: str) -> JobPage:
    """Everything the job page shows; ``NotFoundError`` when the job is not this user's."""
    result = m.job_result(job_id, tenant=tenant)
    job = result.job
    if job.user_id != user_id:
        raise NotFoundError(f"no job {job_id!r} for user {user_id!r}")
    messages = []
    for i in [str(i) for i in job.payload.get("message_ids", [])][:200]:
        try:
            messages.append(m.get(i, user_id=user_id, tenant=tenant))
        except NotFoundError:
            continue  # a turn deleted since
    written = result.memories[:500]
    return JobPage(job, messages, written, _flags(m, user_id, tenant, written + messages))
