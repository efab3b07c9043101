"""The library calls REST serves beyond the memories' CRUD: ask, the entity graph, observations, routines, the
archive, and what a background job wrote. Each runs the same ``Memory`` call as the library, bound to the tenant of
the caller's key, on a worker thread, and leaves an audit line.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from memlane.answer.ask import Answer
from memlane.engine import Memory
from memlane.graph.neighbourhood import Neighbourhood
from memlane.graph.types import RelationEdge
from memlane.models import AddResult, ArchivedMemory, JobResult, MemoryItem, MemoryKind
from memlane.records.timeline import TimelineFilter, TimelinePage
from memlane.security.edge_limits import Bound
from memlane.server.routes.deps import Reader, Svc, Writer
from memlane.server.routes.requests import (
    AskRequest,
    ObserveRequest,
    QueryRequest,
    RestoreRequest,
    RoutinesRequest,
    TimelineResponse,
)
from memlane.server.strict import StrictRoute

router = APIRouter(route_class=StrictRoute)  # strict bodies, as on the app's own routes
UserQ = Annotated[str, Query(min_length=1, description="the user within the key's tenant"), Bound("id_chars")]
Limit = Annotated[int, Query(ge=0, le=1000)]
Offset = Annotated[int, Query(ge=0, le=10**12)]


@router.post("/v1/ask", response_model=Answer, tags=["memories"])
async def ask(body: AskRequest, who: Reader, svc: Svc) -> Answer:
    """Answer a question from a user's memories: a structured query (count, exists, list, first/last, order, time
    range) when it is one, else search; with an LLM configured, a generated answer whose claims cite memory ids.
    """
    return await svc.call(
        who,
        "ask",
        lambda m: m.ask(
            body.question,
            user_id=body.user_id,
            top_k=body.top_k,
            now=body.now,
            token_budget=body.token_budget,
            tenant=who.tenant,
        ),
        user_id=body.user_id,
        describe=lambda a: f"{a.route}, {len(a.hits)} hits",
    )


@router.post("/v1/memories/query", response_model=list[MemoryItem], tags=["memories"])
async def query_memories(body: QueryRequest, who: Reader, svc: Svc) -> list[MemoryItem]:
    """A user's memories that match any of `Memory.list`'s filters (kind, role, speaker, time range, metadata,
    validity), oldest first.
    """
    return await svc.call(
        who,
        "list",
        lambda m: m.list(
            user_id=body.user_id, filters=body.filters, limit=body.limit, offset=body.offset, tenant=who.tenant
        ),
        user_id=body.user_id,
        describe=lambda r: f"{len(r)} memories",
    )


@router.get("/v1/timeline", response_model=TimelineResponse, tags=["memories"])
async def timeline(
    who: Reader,
    svc: Svc,
    user_id: UserQ,
    kind: MemoryKind | None = None,
    category: Annotated[str | None, Query(min_length=1), Bound("name_chars")] = None,
    entity: Annotated[str | None, Query(min_length=1, description="a name or alias"), Bound("name_chars")] = None,
    include_superseded: bool = False,
    flagged_only: bool = False,
    limit: Annotated[int, Query(ge=1), Bound("top_k")] = 50,
    after: Annotated[str | None, Query(min_length=1, description="the `next` of a page"), Bound("cursor_chars")] = None,
) -> TimelineResponse:
    """One page of a user's memories newest first by when they happened (event time, else when stored), filtered
    exactly (kind, category, entity, validity, flag); pass the page's `next` as `after` for the next page.
    """
    where = TimelineFilter(kind, category, entity, include_superseded, flagged_only)

    def run(m: Memory) -> TimelinePage:
        return m.timeline(user_id=user_id, where=where, limit=limit, after=after, tenant=who.tenant)

    page = await svc.call(who, "timeline", run, user_id=user_id, describe=lambda p: f"{len(p.items)} memories")
    return TimelineResponse(items=page.items, next=None if page.next is None else page.next.encode())


@router.get("/v1/graph", response_model=Neighbourhood, tags=["graph"])
async def graph(
    who: Reader,
    svc: Svc,
    user_id: UserQ,
    entity: Annotated[str, Query(min_length=1, description="a name or alias, e.g. Mel, my sister"), Bound("id_chars")],
    limit: Annotated[int, Query(ge=1), Bound("top_k")] = 10,
) -> Neighbourhood:
    """An entity's neighbourhood: its node, relations, the entities mentioned with it, its latest memories."""
    return await svc.call(
        who,
        "graph",
        lambda m: m.graph(entity, user_id=user_id, limit=limit, tenant=who.tenant),
        user_id=user_id,
        target=entity,
    )


@router.get("/v1/relations", response_model=list[RelationEdge], tags=["graph"])
async def relations(
    who: Reader,
    svc: Svc,
    user_id: UserQ,
    entity: Annotated[str | None, Query(min_length=1), Bound("id_chars")] = None,
    current_only: bool = False,
) -> list[RelationEdge]:
    """The typed relations of a user's graph (of one entity when given), with sources and validity windows."""
    return await svc.call(
        who,
        "relations",
        lambda m: m.relations(user_id=user_id, entity=entity, current_only=current_only, tenant=who.tenant),
        user_id=user_id,
        target=entity,
        describe=lambda r: f"{len(r)} relations",
    )


@router.post("/v1/observations", response_model=AddResult, tags=["memories"])
async def observe(body: ObserveRequest, who: Writer, svc: Svc) -> AddResult:
    """Store grounded observations (captions with `[label:Type]` tags, a time window, a media reference), all or
    none; already stored ones are listed in `duplicates`.
    """
    return await svc.call(
        who,
        "observe",
        lambda m: m.observe(
            body.observations,
            user_id=body.user_id,
            session_id=body.session_id,
            agent_id=body.agent_id,
            tenant=who.tenant,
        ),
        user_id=body.user_id,
        describe=lambda r: f"{len(r.items)} observations, {len(r.duplicates)} duplicates",
    )


@router.post("/v1/routines", response_model=list[MemoryItem], tags=["memories"])
async def routines(body: RoutinesRequest, who: Writer, svc: Svc) -> list[MemoryItem]:
    """Detect recurring actions in a user's turns, store each as a memory of kind `routine`; the current ones."""
    return await svc.call(
        who,
        "routines",
        lambda m: m.routines(user_id=body.user_id, min_occurrences=body.min_occurrences, tenant=who.tenant),
        user_id=body.user_id,
        describe=lambda r: f"{len(r)} routines",
    )


@router.get("/v1/archive", response_model=list[ArchivedMemory], tags=["archive"])
async def list_archived(
    who: Reader, svc: Svc, user_id: UserQ, limit: Limit = 100, offset: Offset = 0
) -> list[ArchivedMemory]:
    """A user's memories evicted beyond capacity, most recently archived first."""
    return await svc.call(
        who,
        "archive",
        lambda m: m.archive(user_id=user_id, limit=limit, offset=offset, tenant=who.tenant),
        user_id=user_id,
        describe=lambda r: f"{len(r)} archived",
    )


@router.post("/v1/archive/{memory_id}/restore", response_model=MemoryItem, tags=["archive"])
async def restore_memory(memory_id: str, body: RestoreRequest, who: Writer, svc: Svc) -> MemoryItem:
    """Bring an archived memory back into every index."""
    return await svc.call(
        who,
        "restore",
        lambda m: m.restore(memory_id, user_id=body.user_id, tenant=who.tenant),
        user_id=body.user_id,
        target=memory_id,
    )


@router.get("/v1/jobs/{job_id}/result", response_model=JobResult, tags=["jobs"])
async def job_result(job_id: str, who: Reader, svc: Svc) -> JobResult:
    """A background job of the key's tenant by its id alone, and the typed memories it wrote."""

    def run(m: Memory) -> JobResult:
        return m.job_result(job_id, tenant=who.tenant)

    return await svc.call(
        who, "job_result", run, target=job_id, describe=lambda r: f"{r.job.state}, {len(r.memories)} memories"
    )
