"""What the inspector's pages show, read through the public ``Memory`` API on a worker thread.

Every page is bounded: the timeline reads one page of rows (``limit`` + 1, to know whether another follows), and the
filters the store cannot apply itself (category, entity) scan at most ``SCAN_CAP`` rows per page, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memlane.engine import Memory
from memlane.errors import NotFoundError
from memlane.models import (
    Filters,
    FlaggedMemory,
    HistoryEntry,
    Hit,
    InjectionFlag,
    Job,
    MemoryItem,
    MemoryKind,
    utcnow,
)
from memlane.retrieval.query import analyse_query
from memlane.retrieval.shape import query_shape

PAGE = 50
SCAN_CAP = 2000  # rows read per timeline page when filtering by category or entity


@dataclass(frozen=True)
class TimelineQuery:
    """The timeline's filters and position."""

    kind: str = ""
    category: str = ""
    entity: str = ""
    validity: str = "current"  # current | all
    flag: str = "any"  # any | flagged
    offset: int = 0

    def store_filters(self) -> Filters:
        return Filters(
            kind=MemoryKind(self.kind) if self.kind else None,
            include_superseded=self.validity == "all",
        )


@dataclass
class TimelinePage:
    """One page of the timeline; ``scanned``/``capped`` say how far a category or entity filter read."""

    items: list[MemoryItem]
    flags: dict[str, InjectionFlag]
    next_offset: int | None
    scanned: int = 0
    capped: bool = False
    flagged: list[FlaggedMemory] = field(default_factory=list)


def timeline(m: Memory, user_id: str, tenant: str, q: TimelineQuery) -> TimelinePage:
    """One page of a user's memories, oldest first, with their injection flags."""
    if q.flag == "flagged":
        found = m.flagged(user_id=user_id, tenant=tenant, limit=PAGE + 1, offset=q.offset)
        more = len(found) > PAGE
        found = found[:PAGE]
        return TimelinePage(
            items=[f.memory for f in found],
            flags={f.memory.id: f.flag for f in found},
            next_offset=q.offset + PAGE if more else None,
            flagged=found,
        )
    flt = q.store_filters()
    if not q.category and not q.entity:
        rows = m.list(user_id=user_id, tenant=tenant, filters=flt, limit=PAGE + 1, offset=q.offset)
        items = rows[:PAGE]
        nxt = q.offset + PAGE if len(rows) > PAGE else None
        return TimelinePage(items, _flags(m, user_id, tenant, items), nxt)
    # category / entity: filtered here, over a bounded scan of the store's order
    entity = q.entity.strip().lower()
    items, offset, scanned, batch = [], q.offset, 0, 500
    exhausted = False
    while len(items) < PAGE and scanned < SCAN_CAP:
        rows = m.list(user_id=user_id, tenant=tenant, filters=flt, limit=batch, offset=offset)
        for i, it in enumerate(rows):
            if (not q.category or it.category == q.category) and (not entity or entity in it.entities):
                items.append(it)
                if len(items) == PAGE:
                    offset += i + 1
                    scanned += i + 1
                    break
        else:
            offset += len(rows)
            scanned += len(rows)
            if len(rows) < batch:
                exhausted = True
                break
            continue
        break
    capped = not exhausted and len(items) < PAGE
    return TimelinePage(items, _flags(m, user_id, tenant, items), None if exhausted else offset, scanned, capped)


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
