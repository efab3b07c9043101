"""The library's maintenance calls over REST: enforce capacity now, merge and split entities, queue failed jobs
again. Each is the ``Memory`` call of the same name, in the caller's tenant, with its audit line.
"""

from __future__ import annotations

from fastapi import APIRouter

from memlane.server.routes.deps import Svc, Writer
from memlane.server.routes.requests import Counted, ForgetRequest, MergeRequest, RetryRequest, SplitRequest
from memlane.server.strict import StrictRoute

router = APIRouter(route_class=StrictRoute)  # strict bodies, as on the app's own routes


@router.post("/v1/forget", response_model=list[str], tags=["archive"])
async def forget(body: ForgetRequest, who: Writer, svc: Svc) -> list[str]:
    """Enforce the configured capacity now: the lowest survival scores go to the archive (destroyed if `hard`);
    the ids evicted.
    """
    return await svc.call(
        who,
        "forget",
        lambda m: m.forget(user_id=body.user_id, hard=body.hard, tenant=who.tenant),
        user_id=body.user_id,
        describe=lambda ids: f"{len(ids)} evicted{' (hard)' if body.hard else ''}",
    )


@router.post("/v1/entities/merge", response_model=Counted, tags=["graph"])
async def merge_entities(body: MergeRequest, who: Writer, svc: Svc) -> Counted:
    """Make `source` the same entity as `target` (mentions, aliases, relations move); how many memories moved."""
    n = await svc.call(
        who,
        "merge_entities",
        lambda m: m.merge_entities(body.source, body.target, user_id=body.user_id, tenant=who.tenant),
        user_id=body.user_id,
        target=f"{body.source[:100]} -> {body.target[:100]}",
        describe=lambda k: f"{k} memories",
    )
    return Counted(count=n)


@router.post("/v1/entities/split", response_model=Counted, tags=["graph"])
async def split_entity(body: SplitRequest, who: Writer, svc: Svc) -> Counted:
    """Split the given memories off `entity` into a new entity `new_name` of the same type; how many moved."""
    n = await svc.call(
        who,
        "split_entity",
        lambda m: m.split_entity(
            body.entity, body.new_name, user_id=body.user_id, memory_ids=body.memory_ids, tenant=who.tenant
        ),
        user_id=body.user_id,
        target=body.entity[:200],
        describe=lambda k: f"{k} memories",
    )
    return Counted(count=n)


@router.post("/v1/jobs/retry", response_model=Counted, tags=["jobs"])
async def retry_jobs(body: RetryRequest, who: Writer, svc: Svc) -> Counted:
    """Queue a user's failed jobs again; how many."""
    n = await svc.call(
        who,
        "retry_jobs",
        lambda m: m.retry_jobs(user_id=body.user_id, tenant=who.tenant),
        user_id=body.user_id,
        describe=lambda k: f"{k} jobs",
    )
    return Counted(count=n)
