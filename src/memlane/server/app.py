"""The REST API: FastAPI routes over the same ``Memory`` calls as the library and the CLI, each bound to the
tenant of the caller's key, run on a worker thread, and written to the audit log.
"""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from memlane import __version__
from memlane.answer.context import Context
from memlane.config import Config
from memlane.engine import Memory
from memlane.errors import MemlaneError, ValidationError
from memlane.models import AddResult, FlaggedMemory, HistoryEntry, Hit, Job, MemoryItem, Stats
from memlane.security.edge_limits import Bound
from memlane.security.hit_flags import flag_hits
from memlane.security.validation import Limits
from memlane.server.admin_store import AdminStore, open_admin_store
from memlane.server.documents import router as documents_router
from memlane.server.edge import KeyFirst
from memlane.server.limits import BodyLimit, InFlightLimit
from memlane.server.metrics import MetricsMiddleware
from memlane.server.routes import SERVERS, TAGS, operation_id, register
from memlane.server.routes.deps import Admin, Reader, Writer
from memlane.server.schemas import (
    AddRequest,
    AuditLine,
    ContextRequest,
    Deleted,
    FeedbackRequest,
    Health,
    Imported,
    Problem,
    Ready,
    SearchRequest,
    SearchResponse,
    UpdateRequest,
)
from memlane.server.service import INSECURE_WARNING, ServerSettings, Service, public_detail, status_of
from memlane.server.strict import install as install_strict
from memlane.server.strict import problem, safe
from memlane.server.ui.mount import mount_inspector

log = logging.getLogger(__name__)

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": text}
    for code, text in (
        (400, "invalid input (the detail names the field and the limit)"),
        (401, "no key, an unknown key or a revoked key"),
        (403, "the key lacks the scope this route needs"),
        (404, "no such memory or job for this user in this tenant"),
        (409, "the store was indexed with another embedder"),
        (408, "request body not received in time"),
        (413, "request body over the size limit"),
        (415, "a JSON body sent as another Content-Type, or with none"),
        (429, "rate limit of this key exceeded; see Retry-After"),
        (503, "server busy or store unavailable; see Retry-After"),
        (504, "a job did not finish in time"),
    )
}
NDJSON = "application/x-ndjson"
UserQ = Annotated[str, Query(description="the user within the key's tenant"), Bound("id_chars")]


class NDJSONResponse(PlainTextResponse):
    """JSON Lines (an export)."""

    media_type = NDJSON


def create_app(settings: ServerSettings, *, memory: Memory | None = None, admin: AdminStore | None = None) -> FastAPI:
    """The ASGI app. Given a ``memory`` (or ``admin`` database) it uses it and leaves closing it to the caller;
    otherwise it opens the store named in ``settings`` at startup and closes it at shutdown.
    """
    svc = Service(settings, admin or open_admin_store(settings.data_dir, settings.store), memory)
    owned = memory is None
    config = Config.from_env().with_(data_dir=settings.data_dir) if owned else None
    # the store's limits, in every schema and every check of this edge (memlane.security.edge_limits)
    limits = Limits.from_config(config) if memory is None else memory.limits

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.insecure_dev:
            log.warning("!!! %s — never expose this server beyond your own machine !!!", INSECURE_WARNING)
        if config is not None:
            svc.memory = Memory(settings.store, embedder=settings.embedder, config=config)
            # the model loaded (the static table distilled, once: about a minute on two cores) before the first
            # request, which would otherwise wait for it and time out at its client
            load = getattr(svc.memory.embedder, "load", None)
            if callable(load):
                await anyio.to_thread.run_sync(load)
        svc.start_telemetry()  # per-operation metrics (memlane.telemetry)
        try:
            yield
        finally:
            svc.stop_telemetry()
            if owned and svc.memory is not None:
                svc.memory.close()
                svc.memory = None
            if admin is None:
                svc.admin.close()
            svc.buckets.close()

    app = FastAPI(
        title="memlane",
        version=__version__,
        summary="Long-term memory for conversational AI: tenants, keys, explained hybrid search.",
        lifespan=lifespan,
        responses=_ERRORS,
        generate_unique_id_function=operation_id,
        openapi_tags=TAGS,
        servers=SERVERS,
        docs_url=None,  # served from the package by the inspector (memlane.server.ui), so that it works offline
        redoc_url=None,
    )
    app.state.service = svc
    install_strict(app, limits)
    exempt = frozenset({"/health", "/ready", "/metrics"})
    # outermost last: metrics, then the key (from the headers alone), then the body (read whole, within its size and
    # time limits, not counted as in flight), then the in-flight cap on requests being served
    app.add_middleware(InFlightLimit, max_inflight=settings.max_inflight, exempt=exempt)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        timeout=settings.body_timeout,
        max_receiving=settings.max_receiving,
    )
    app.add_middleware(KeyFirst, service=svc)
    app.add_middleware(MetricsMiddleware, metrics=svc.metrics)

    @app.exception_handler(MemlaneError)
    async def memlane_error(_: Request, exc: MemlaneError) -> JSONResponse:
        status = status_of(exc)
        headers = {"Retry-After": "1"} if status == 503 else None
        detail = safe(public_detail(exc))
        loc = (
            ["body", *(p if isinstance(p, int) else safe(p) for p in exc.loc)]
            if isinstance(exc, ValidationError) and exc.loc
            else []
        )
        errors: list[dict[str, Any]] = (
            [{"loc": loc, "msg": detail, "type": type(exc).__name__}] if status == 400 else []
        )
        return problem(status, detail, errors, headers)

    # -- memories ----------------------------------------------------------------------------------
    @app.post(
        "/v1/memories",
        response_model=AddResult,
        tags=["memories"],
        responses={202: {"model": AddResult, "description": "stored; extraction queued as job_id"}},
    )
    async def add(body: AddRequest, response: Response, who: Writer) -> AddResult:
        """Store messages (all or none) and extract typed memories, or queue that (202) with `async`."""
        given = body.messages if isinstance(body.messages, list) else [body.messages]
        msgs = [m if isinstance(m, str) else m.model_dump(exclude_unset=True) for m in given]
        result = await svc.call(
            who,
            "add",
            lambda m: m.add(
                msgs,
                user_id=body.user_id,
                session_id=body.session_id,
                agent_id=body.agent_id,
                timestamp=body.timestamp,
                metadata=body.metadata,
                infer=body.infer,
                async_mode=body.async_,
                tenant=who.tenant,
            ),
            user_id=body.user_id,
            describe=lambda r: f"{len(r.items)} messages, {len(r.duplicates)} duplicates",
        )
        if body.async_ and result.job_id is not None:
            response.status_code = 202
        return result

    @app.post("/v1/search", response_model=SearchResponse, tags=["memories"])
    async def search(body: SearchRequest, who: Reader) -> SearchResponse:
        """The memories that best answer a query; `explain` keeps each hit's per-dimension breakdown. A memory flagged
        as a likely prompt injection carries its `flag`: never put its text in a prompt unfenced.
        """

        def run(m: Memory) -> list[Hit]:
            found = m.search(
                body.query,
                user_id=body.user_id,
                top_k=body.top_k,
                filters=body.filters,
                preset_name=body.preset,
                tenant=who.tenant,
            )
            return flag_hits(m, found, user_id=body.user_id, tenant=who.tenant)

        hits = await svc.call(who, "search", run, user_id=body.user_id, describe=lambda h: f"{len(h)} hits")
        if not body.explain:
            hits = [h.model_copy(update={"breakdown": {}, "triggers": {}}) for h in hits]
        return SearchResponse(hits=hits)

    @app.post("/v1/context", response_model=Context, tags=["memories"])
    async def context(body: ContextRequest, who: Reader) -> Context:
        """The memories that answer a query, fenced as quoted data for an LLM prompt within a token budget;
        memories flagged as likely prompt injections are left out.
        """
        return await svc.call(
            who,
            "context",
            lambda m: m.context(
                body.query, user_id=body.user_id, token_budget=body.token_budget, top_k=body.top_k, tenant=who.tenant
            ),
            user_id=body.user_id,
            describe=lambda c: f"{len(c.memories)} memories, {c.tokens} tokens",
        )

    @app.get("/v1/memories/{memory_id}", response_model=MemoryItem, tags=["memories"])
    async def get(memory_id: str, user_id: UserQ, who: Reader) -> MemoryItem:
        """One memory of this user."""
        return await svc.call(
            who,
            "get",
            lambda m: m.get(memory_id, user_id=user_id, tenant=who.tenant),
            user_id=user_id,
            target=memory_id,
        )

    @app.get("/v1/memories", response_model=list[MemoryItem], tags=["memories"])
    async def list_(
        user_id: UserQ,
        who: Reader,
        limit: Annotated[int, Query(ge=0, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=10**12)] = 0,
        session_id: str | None = None,
    ) -> list[MemoryItem]:
        """A user's memories, oldest first."""
        filters = {"session_id": session_id} if session_id is not None else None
        return await svc.call(
            who,
            "list",
            lambda m: m.list(user_id=user_id, filters=filters, limit=limit, offset=offset, tenant=who.tenant),
            user_id=user_id,
            describe=lambda r: f"{len(r)} memories",
        )

    @app.patch("/v1/memories/{memory_id}", response_model=MemoryItem, tags=["memories"])
    async def update(memory_id: str, body: UpdateRequest, who: Writer) -> MemoryItem:
        """Change a memory's text (re-indexed), metadata or importance; recorded in its history."""
        return await svc.call(
            who,
            "update",
            lambda m: m.update(
                memory_id,
                user_id=body.user_id,
                text=body.text,
                metadata=body.metadata,
                importance=body.importance,
                tenant=who.tenant,
            ),
            user_id=body.user_id,
            target=memory_id,
        )

    @app.delete("/v1/memories/{memory_id}", response_model=Deleted, tags=["memories"])
    async def delete(memory_id: str, user_id: UserQ, who: Writer) -> Deleted:
        """Remove a memory from every index (and typed memories extracted from it alone)."""
        ids = await svc.call(
            who,
            "delete",
            lambda m: m.delete(memory_id, user_id=user_id, tenant=who.tenant),
            user_id=user_id,
            target=memory_id,
        )
        return Deleted(deleted=ids, count=len(ids))

    @app.delete("/v1/memories", response_model=Deleted, tags=["memories"])
    async def delete_all(user_id: UserQ, who: Writer) -> Deleted:
        """Remove every memory and all history of one user."""
        n = await svc.call(
            who, "delete_all", lambda m: m.delete_all(user_id=user_id, tenant=who.tenant), user_id=user_id
        )
        return Deleted(count=n)

    @app.get("/v1/memories/{memory_id}/history", response_model=list[HistoryEntry], tags=["memories"])
    async def history(memory_id: str, user_id: UserQ, who: Reader) -> list[HistoryEntry]:
        """Every recorded change of a memory, oldest first."""
        return await svc.call(
            who,
            "history",
            lambda m: m.history(memory_id, user_id=user_id, tenant=who.tenant),
            user_id=user_id,
            target=memory_id,
        )

    @app.post("/v1/feedback", status_code=204, tags=["memories"])
    async def feedback(body: FeedbackRequest, who: Writer) -> Response:
        """Record whether a memory returned for a query was useful (`memlane tune` learns from it)."""

        def run(m: Memory) -> None:
            m.get(body.memory_id, user_id=body.user_id, tenant=who.tenant)  # 404 unless it is this user's
            m.feedback(body.memory_id, useful=body.useful, query=body.query, user_id=body.user_id, tenant=who.tenant)

        await svc.call(who, "feedback", run, user_id=body.user_id, target=body.memory_id)
        return Response(status_code=204)

    # -- transfer ----------------------------------------------------------------------------------
    @app.get(
        "/v1/export",
        tags=["transfer"],
        responses={200: {"content": {NDJSON: {"schema": {"type": "string"}}}, "description": "JSONL export"}},
    )
    async def export(who: Reader, user_id: str | None = None) -> NDJSONResponse:
        """One user's memories as JSONL (without `user_id`: the whole tenant, admin keys only)."""
        if user_id is None and not who.admin:
            raise ValidationError("user_id is required (exporting a whole tenant needs an admin key)")
        buf = io.StringIO()
        n = await svc.call(
            who,
            "export",
            lambda m: m.export(buf, user_id=user_id, tenant=who.tenant),
            user_id=user_id,
            describe=lambda k: f"{k} memories",
        )
        return NDJSONResponse(buf.getvalue(), headers={"X-Memlane-Count": str(n)})

    @app.post(
        "/v1/import",
        response_model=Imported,
        tags=["transfer"],
        openapi_extra={"requestBody": {"required": True, "content": {NDJSON: {"schema": {"type": "string"}}}}},
    )
    async def import_(request: Request, who: Writer, user_id: str | None = None) -> Imported:
        """Load a JSONL export into one user, all or nothing (without `user_id`: keep the file's users, admin only)."""
        if user_id is None and not who.admin:
            raise ValidationError("user_id is required (keeping the file's user ids needs an admin key)")
        raw = await request.body()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"the body is not UTF-8 (byte {exc.start})") from None
        n = await svc.call(
            who,
            "import",
            lambda m: m.import_(io.StringIO(text), user_id=user_id, keep_user_ids=user_id is None, tenant=who.tenant),
            user_id=user_id,
            describe=lambda k: f"{k} memories",
        )
        return Imported(imported=n)

    # -- jobs and stats ----------------------------------------------------------------------------
    @app.get("/v1/jobs", response_model=list[Job], tags=["jobs"])
    async def jobs(
        user_id: UserQ, who: Reader, state: str | None = None, limit: Annotated[int, Query(ge=0, le=1000)] = 100
    ) -> list[Job]:
        """A user's background jobs, oldest first."""
        return await svc.call(
            who, "jobs", lambda m: m.jobs(user_id=user_id, state=state, limit=limit, tenant=who.tenant), user_id=user_id
        )

    @app.get("/v1/jobs/{job_id}", response_model=Job, tags=["jobs"])
    async def job(job_id: str, user_id: UserQ, who: Reader) -> Job:
        """One background job: state, attempts, last error."""
        return await svc.call(
            who, "job", lambda m: m.job(job_id, user_id=user_id, tenant=who.tenant), user_id=user_id, target=job_id
        )

    @app.get("/v1/stats", response_model=Stats, tags=["jobs"])
    async def stats(user_id: UserQ, who: Reader) -> Stats:
        """Counts of one user's memories (store path and size are shown to admin keys only)."""
        found = await svc.call(who, "stats", lambda m: m.stats(user_id=user_id, tenant=who.tenant), user_id=user_id)
        return found if who.admin else found.model_copy(update={"path": "", "size_bytes": 0})

    # -- operations --------------------------------------------------------------------------------
    @app.get("/health", response_model=Health, tags=["operations"])
    async def health() -> Health:
        """Liveness; says loudly when authentication is off."""
        if settings.insecure_dev:
            return Health(status="insecure-dev", version=__version__, auth=False, warning=INSECURE_WARNING)
        return Health(status="ok", version=__version__, auth=True)

    @app.get("/ready", response_model=Ready, tags=["operations"], responses={503: {"model": Ready}})
    async def ready() -> Response:
        """Readiness: the store is open and answers a query."""
        if svc.memory is None:
            return JSONResponse(Ready(ready=False, detail="store not open").model_dump(), status_code=503)
        probe = svc.memory
        try:
            await svc.run_blocking(lambda: probe.list(user_id="__readiness__", limit=1))
        except MemlaneError as exc:
            return JSONResponse(Ready(ready=False, detail=str(exc)[:200]).model_dump(), status_code=503)
        return JSONResponse(Ready(ready=True).model_dump())

    @app.get(
        "/metrics",
        tags=["operations"],
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics(who: Admin) -> Response:
        """Prometheus metrics (admin keys)."""
        body, content_type = svc.metrics.render()
        return Response(body, media_type=content_type)

    @app.get("/admin/flagged", response_model=list[FlaggedMemory], tags=["operations"])
    async def flagged(
        who: Admin,
        user_id: UserQ,
        limit: Annotated[int, Query(ge=0, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=10**12)] = 0,
    ) -> list[FlaggedMemory]:
        """A user's memories flagged as likely prompt injections (text kept, with reason and score), newest first."""
        return await svc.call(
            who,
            "flagged",
            lambda m: m.flagged(user_id=user_id, tenant=who.tenant, limit=limit, offset=offset),
            user_id=user_id,
            describe=lambda f: f"{len(f)} flagged",
        )

    @app.get("/admin/audit", response_model=list[AuditLine], tags=["operations"])
    async def audit(
        who: Admin,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        after: Annotated[int, Query(ge=0, le=2**62)] = 0,
        action: str | None = None,
    ) -> list[AuditLine]:
        """The audit log of the key's tenant, oldest first: page with `after` = the last `seq` seen."""
        entries = await svc.run_blocking(lambda: svc.admin.audit(who.tenant, limit=limit, after=after, action=action))
        return [
            AuditLine(
                seq=e.seq,
                at=e.at,
                key=None if e.key_prefix is None else f"ml_{e.key_prefix}",
                tenant=e.tenant,
                action=e.action,
                user_id=e.user_id,
                target=e.target,
                status=e.status,
                detail=e.detail,
            )
            for e in entries
        ]

    app.include_router(documents_router)  # POST /v1/documents (memlane.server.documents)
    register(app)  # the routes beyond the memories' own (memlane.server.routes)
    mount_inspector(app, svc)  # the inspector at /ui and Swagger UI at /docs (memlane.server.ui)
    return app
