"""What the MCP tools return: small pydantic models, the JSON edge whose schemas the tools publish as output schemas.

Memory texts reach these models already quoted (``memlane.security.hit_flags``): a flagged memory's text withheld,
every other text made inert for a prompt.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memlane.answer import Answer
from memlane.graph.neighbourhood import Neighbourhood
from memlane.graph.types import RelationEdge
from memlane.models import Hit, InjectionFlag, MemoryItem
from memlane.security.fencing import neutralise


class StoredMemory(BaseModel):
    """A memory as an MCP client sees it."""

    id: str
    kind: str
    text: str
    speaker: str | None = None
    role: str | None = None
    timestamp: str
    session_id: str | None = None

    @classmethod
    def of(cls, item: MemoryItem) -> StoredMemory:
        return cls(
            id=item.id,
            kind=item.kind.value,
            text=item.text,
            speaker=item.speaker,
            role=item.role,
            timestamp=item.timestamp.isoformat(),
            session_id=item.session_id,
        )


class ListedMemory(StoredMemory):
    """A stored memory with its importance, metadata and injection flag (``get``, ``list``, ``update``)."""

    importance: float
    metadata: dict[str, object] = Field(default_factory=dict)
    flagged: bool = Field(default=False, description="flagged as a likely prompt injection: its text is withheld")
    flag_reasons: list[str] = Field(default_factory=list, description="why the detector flagged it")

    @classmethod
    def flagged_of(cls, item: MemoryItem, flag: InjectionFlag | None) -> ListedMemory:
        return cls(
            **StoredMemory.of(item).model_dump(),
            importance=item.importance,
            metadata=dict(item.metadata),
            flagged=flag is not None,
            flag_reasons=[] if flag is None else list(flag.reasons),
        )


class TimelineMemory(ListedMemory):
    """A memory on the timeline: a listed memory with the fields the timeline sorts and filters by."""

    event_time: str | None = Field(default=None, description="when what it describes happened, if known")
    created_at: str = Field(description="when it was stored (the timeline's time when event_time is unknown)")
    category: str | None = None
    superseded_by: str | None = Field(default=None, description="the memory that replaced it, if any")

    @classmethod
    def timed_of(cls, item: MemoryItem, flag: InjectionFlag | None) -> TimelineMemory:
        return cls(
            **ListedMemory.flagged_of(item, flag).model_dump(),
            event_time=None if item.event_time is None else item.event_time.isoformat(),
            created_at=item.created_at.isoformat(),
            category=None if item.category is None else neutralise(item.category),
            superseded_by=item.superseded_by,
        )


class TimelineOutput(BaseModel):
    """One page of a user's timeline, newest first, and the cursor of the next (``None`` on the last page)."""

    memories: list[TimelineMemory]
    next: str | None = Field(description="pass as `after` for the next page; null on the last page")


class AddOutput(BaseModel):
    """What ``add`` stored: new messages, ids already stored, typed memories extracted, a background job."""

    stored: list[StoredMemory]
    duplicates: list[str] = Field(default_factory=list)
    extracted: list[StoredMemory] = Field(default_factory=list)
    job_id: str | None = None


class DimensionScore(BaseModel):
    """One dimension's part in a hit's score."""

    raw: float
    normalized: float
    weight: float
    contribution: float


class SearchHit(BaseModel):
    """A ranked memory with the explanation of its score."""

    memory: StoredMemory
    score: float
    explanation: dict[str, DimensionScore] = Field(description="each dimension's raw, normalised and weighted part")
    triggers: dict[str, str] = Field(description="what in the query engaged each dimension")
    related: list[StoredMemory] = Field(
        default_factory=list,
        description="other forms of the same statement that matched too (the source turn, or typed memories of it)",
    )
    flagged: bool = Field(default=False, description="flagged as a likely prompt injection: its text is withheld")
    flag_reasons: list[str] = Field(default_factory=list, description="why the detector flagged it")

    @classmethod
    def of(cls, hit: Hit) -> SearchHit:
        return cls(
            memory=StoredMemory.of(hit.memory),
            score=hit.score,
            explanation={
                dim: DimensionScore(raw=b.raw, normalized=b.normalized, weight=b.weight, contribution=b.contribution)
                for dim, b in hit.breakdown.items()
            },
            triggers=dict(hit.triggers),
            related=[StoredMemory.of(m) for m in hit.related],
            flagged=hit.flag is not None,
            flag_reasons=[] if hit.flag is None else list(hit.flag.reasons),
        )


class SearchOutput(BaseModel):
    """The hits of a search, best first."""

    hits: list[SearchHit]


class ListOutput(BaseModel):
    """One page of a user's memories, oldest first."""

    memories: list[ListedMemory]


class Citation(BaseModel):
    """A statement of a generated answer and the ids of the memories it cites."""

    text: str
    memory_ids: list[str]


class AskOutput(BaseModel):
    """What ``ask`` found: the route taken and why, the answer, the evidence and, with an LLM, checked claims."""

    question: str
    route: str = Field(
        description="structured (a count, exists, list, first/last, order or time-range query) or search"
    )
    reason: str = Field(description="why that route was taken")
    answer: str | None = Field(description="the answer, quoted as data (None when nothing answers the question)")
    structured_query: str | None = Field(default=None, description="the structured query in words, when one ran")
    evidence: list[StoredMemory] = Field(default_factory=list, description="the structured query's memories")
    hits: list[SearchHit] = Field(default_factory=list, description="the search hits the answer rests on")
    claims: list[Citation] = Field(default_factory=list, description="a generated answer's claims (with an LLM)")
    unsupported: list[Citation] = Field(default_factory=list, description="claims citing no evidence given")

    @classmethod
    def of(cls, answer: Answer, hits: list[Hit], evidence: list[MemoryItem]) -> AskOutput:
        """``hits`` and ``evidence``: the answer's, already quoted."""
        s = answer.structured
        return cls(
            question=answer.question,
            route=answer.route,
            reason=answer.reason,
            answer=None if answer.answer is None else neutralise(answer.answer),
            structured_query=None if s is None else s.query,
            evidence=[StoredMemory.of(m) for m in evidence],
            hits=[SearchHit.of(h) for h in hits],
            claims=[Citation(text=neutralise(c.text), memory_ids=list(c.memory_ids)) for c in answer.claims],
            unsupported=[Citation(text=neutralise(c.text), memory_ids=list(c.memory_ids)) for c in answer.unsupported],
        )


class DeleteOutput(BaseModel):
    """The ids a delete removed (the memory first, then typed memories that came from it alone)."""

    deleted: list[str]


class Entity(BaseModel):
    """An entity node: canonical name, type, display form, aliases and how many memories mention it."""

    name: str
    type: str
    display: str
    aliases: list[str]
    mentions: int


class Relation(BaseModel):
    """A typed relation with its validity window and the memories it was read from."""

    subject: str
    predicate: str
    object: str
    valid_from: str
    valid_until: str | None = Field(description="None while the relation holds")
    sources: list[str]

    @classmethod
    def of(cls, r: RelationEdge) -> Relation:
        return cls(
            subject=neutralise(r.subject),
            predicate=neutralise(r.predicate),
            object=neutralise(r.object),
            valid_from=r.valid_from.isoformat(),
            valid_until=None if r.valid_until is None else r.valid_until.isoformat(),
            sources=list(r.sources),
        )


class Mentioned(BaseModel):
    """An entity mentioned with the one asked about, and in how many memories."""

    name: str
    count: int


class GraphOutput(BaseModel):
    """An entity's neighbourhood: its node, relations, the entities mentioned with it and its latest memories."""

    entity: Entity
    relations: list[Relation]
    mentioned_with: list[Mentioned]
    memories: list[StoredMemory]

    @classmethod
    def of(cls, hood: Neighbourhood, memories: list[MemoryItem]) -> GraphOutput:
        """``memories``: the neighbourhood's, already quoted."""
        n = hood.node
        return cls(
            entity=Entity(
                name=neutralise(n.name),
                type=n.type,
                display=neutralise(n.display),
                aliases=[neutralise(a) for a in n.aliases],
                mentions=n.mentions,
            ),
            relations=[Relation.of(r) for r in hood.relations],
            mentioned_with=[Mentioned(name=neutralise(name), count=count) for name, count in hood.related],
            memories=[StoredMemory.of(m) for m in memories],
        )
