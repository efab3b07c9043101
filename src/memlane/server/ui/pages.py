"""The inspector's routes: server-rendered pages over the same ``Memory`` calls as the REST API, each bound to the
tenant of the session's key, run on a worker thread and written to the audit log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import quote, urlencode

import jinja2
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memlane import __version__
from memlane.engine import Memory
from memlane.errors import MemlaneError
from memlane.graph.neighbourhood import Neighbourhood
from memlane.models import Job, JobState, MemoryItem, MemoryKind, UserSummary
from memlane.security.edge_limits import Bound
from memlane.server.keys import Scope
from memlane.server.limits import retry_after
from memlane.server.service import Principal, Service, public_detail, status_of
from memlane.server.ui import views
from memlane.server.ui.session import LoginNeeded, PageError, Sessions

T = TypeVar("T")
HERE = Path(__file__).parent
Text = Annotated[str, Form(), Bound("text_chars")]  # the store's limits (memlane.security.edge_limits)
Token = Annotated[str, Form(max_length=200)]


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every value is escaped: memory text is data, never markup
        undefined=jinja2.StrictUndefined,
    )
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.filters["when"] = lambda t: "" if t is None else t.strftime("%Y-%m-%d %H:%M")
    env.filters["pct"] = lambda x, top: f"{max(0.0, min(100.0, 100.0 * abs(x) / top)):.1f}" if top else "0"
    return env


_ENV = _environment()


def render_page(
    request: Request, sessions: Sessions, name: str, who: Principal | None, status: int = 200, **ctx: Any
) -> HTMLResponse:
    """A template rendered with what every page shows (the tenant, the key's public prefix, the CSRF token)."""
    html = _ENV.get_template(name).render(
        tenant=who.tenant if who else "",
        key=f"ml_{who.key}" if who and who.key else ("insecure-dev" if who else ""),
        csrf=sessions.form_token(request),
        version=__version__,
        **ctx,
    )
    return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)


def render_error(request: Request, exc: PageError, sessions: Sessions) -> HTMLResponse:
    """The error page of a ``PageError``."""
    return render_page(request, sessions, "error.html", None, exc.status, code=exc.status, detail=exc.detail)


def build_router(svc: Service, sessions: Sessions) -> APIRouter:
    """The ``/ui`` routes (hidden from the OpenAPI document: they answer HTML, not the API's JSON)."""
    router = APIRouter(prefix="/ui", include_in_schema=False)

    def render(request: Request, name: str, who: Principal | None, status: int = 200, **ctx: Any) -> HTMLResponse:
        return render_page(request, sessions, name, who, status, **ctx)

    async def call(who: Principal, action: str, fn: Callable[[Memory], T], user_id: str | None = None) -> T:
        try:
            return await svc.call(who, f"ui.{action}", fn, user_id=user_id)
        except MemlaneError as exc:
            raise PageError(status_of(exc), public_detail(exc)) from None

    # -- session -----------------------------------------------------------------------------------
    @router.get("/login")
    async def login_form(request: Request, error: str = "") -> HTMLResponse:
        return render(request, "login.html", None, error=error[:200])

    @router.post("/login")
    async def login(request: Request, key: Annotated[str, Form(max_length=400)]) -> Response:
        address = request.client.host if request.client else "local"
        wait = sessions.failures.blocked(address)
        if not wait:
            try:
                sessions.principal(request, Scope.READ, key=key.strip())
            except (LoginNeeded, PageError):
                wait = sessions.failures.failed(address)
                if not wait:
                    return render(request, "login.html", None, status=401, error="That key was not accepted.")
        if wait:
            page = render(request, "login.html", None, status=429, error="Too many failed logins; try again later.")
            page.headers["Retry-After"] = retry_after(wait)
            return page
        response = RedirectResponse("/ui/users", status_code=303)
        sessions.login(response, request, key.strip())
        return response

    @router.post("/logout")
    async def logout(request: Request, csrf: Token = "") -> Response:
        sessions.check_csrf(request, csrf)
        response = RedirectResponse("/ui/login", status_code=303)
        sessions.logout(response)
        return response

    @router.get("")
    async def home() -> Response:
        return RedirectResponse("/ui/users", status_code=303)

    # -- users and timeline ------------------------------------------------------------------------
    @router.get("/users")
    async def users(request: Request, offset: Annotated[int, Query(ge=0, le=10**9)] = 0) -> HTMLResponse:
        who = sessions.principal(request)
        found: list[UserSummary] = await call(
            who, "users", lambda m: m.users(tenant=who.tenant, limit=views.PAGE + 1, offset=offset)
        )
        more = len(found) > views.PAGE
        return render(
            request,
            "users.html",
            who,
            users=found[: views.PAGE],
            offset=offset,
            next_offset=offset + views.PAGE if more else None,
            prev_offset=max(0, offset - views.PAGE) if offset else None,
        )

    @router.get("/u/{user_id}")
    async def timeline(
        request: Request,
        user_id: str,
        kind: Annotated[str, Query(max_length=32)] = "",
        category: Annotated[str, Query(), Bound("name_chars")] = "",
        entity: Annotated[str, Query(), Bound("name_chars")] = "",
        validity: Annotated[str, Query(pattern="^(current|all)$")] = "current",
        flag: Annotated[str, Query(pattern="^(any|flagged)$")] = "any",
        after: Annotated[str, Query(), Bound("cursor_chars")] = "",
    ) -> HTMLResponse:
        who = sessions.principal(request)
        if kind and kind not in {k.value for k in MemoryKind}:
            raise PageError(400, f"unknown kind {kind[:40]!r}")
        q = views.TimelineQuery(kind, category, entity, validity, flag, after)
        page = await call(who, "timeline", lambda m: views.timeline(m, user_id, who.tenant, q), user_id)
        params = {k: v for k, v in vars(q).items() if v and k != "after"}

        def link(cursor: str) -> str:
            return f"/ui/u/{quote(user_id, safe='')}?" + urlencode({**params, **({"after": cursor} if cursor else {})})

        return render(
            request,
            "timeline.html",
            who,
            user_id=user_id,
            q=q,
            page=page,
            kinds=[k.value for k in MemoryKind],
            next_link=None if page.next_after is None else link(page.next_after),
            first_link=link("") if after else None,
            message=request.query_params.get("done", "")[:200],
        )

    # -- search ------------------------------------------------------------------------------------
    @router.get("/u/{user_id}/search")
    async def search(
        request: Request,
        user_id: str,
        q: Annotated[str, Query(), Bound("text_chars")] = "",
        preset: Annotated[str, Query(max_length=64)] = "",
        top_k: Annotated[int, Query(ge=1, le=100)] = 10,
    ) -> HTMLResponse:
        who = sessions.principal(request)
        page = None
        if q.strip():
            page = await call(
                who, "search", lambda m: views.search(m, user_id, who.tenant, q, preset or None, top_k), user_id
            )
        return render(request, "search.html", who, user_id=user_id, query=q, preset=preset, page=page)

    # -- one memory --------------------------------------------------------------------------------
    @router.get("/u/{user_id}/m/{memory_id}")
    async def memory(request: Request, user_id: str, memory_id: str, q: str = "") -> HTMLResponse:
        who = sessions.principal(request)
        page = await call(who, "memory", lambda m: views.memory_page(m, user_id, who.tenant, memory_id), user_id)
        return render(
            request,
            "memory.html",
            who,
            user_id=user_id,
            page=page,
            query=q[:4000],
            message=request.query_params.get("done", "")[:200],
        )

    def back_to(user_id: str, memory_id: str, done: str) -> RedirectResponse:
        url = f"/ui/u/{quote(user_id, safe='')}/m/{quote(memory_id, safe='')}?" + urlencode({"done": done})
        return RedirectResponse(url, status_code=303)

    @router.post("/u/{user_id}/m/{memory_id}/edit")
    async def edit(
        request: Request,
        user_id: str,
        memory_id: str,
        text: Text,
        importance: Annotated[float, Form(ge=0.0, le=1.0)],
        csrf: Token = "",
    ) -> Response:
        sessions.check_csrf(request, csrf)
        who = sessions.principal(request, Scope.WRITE)

        def run(m: Memory) -> MemoryItem:
            now = m.get(memory_id, user_id=user_id, tenant=who.tenant)
            changed = text if text != now.text else None
            moved = importance if abs(importance - now.importance) > 1e-9 else None
            if changed is None and moved is None:
                return now
            return m.update(memory_id, user_id=user_id, text=changed, importance=moved, tenant=who.tenant)

        await call(who, "update", run, user_id)
        return back_to(user_id, memory_id, "Saved.")

    @router.post("/u/{user_id}/m/{memory_id}/delete")
    async def delete(request: Request, user_id: str, memory_id: str, csrf: Token = "") -> Response:
        sessions.check_csrf(request, csrf)
        who = sessions.principal(request, Scope.WRITE)
        ids = await call(who, "delete", lambda m: m.delete(memory_id, user_id=user_id, tenant=who.tenant), user_id)
        done = f"Deleted {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}."
        return RedirectResponse(f"/ui/u/{quote(user_id, safe='')}?" + urlencode({"done": done}), status_code=303)

    @router.post("/u/{user_id}/m/{memory_id}/feedback")
    async def feedback(
        request: Request,
        user_id: str,
        memory_id: str,
        useful: Annotated[str, Form(pattern="^(yes|no)$")],
        query: Annotated[str, Form(min_length=1), Bound("text_chars")],
        csrf: Token = "",
    ) -> Response:
        sessions.check_csrf(request, csrf)
        who = sessions.principal(request, Scope.WRITE)

        def run(m: Memory) -> None:
            m.get(memory_id, user_id=user_id, tenant=who.tenant)  # not found unless it is this user's
            m.feedback(memory_id, useful=useful == "yes", query=query, user_id=user_id, tenant=who.tenant)

        await call(who, "feedback", run, user_id)
        return back_to(user_id, memory_id, "Feedback recorded.")

    # -- graph and jobs ----------------------------------------------------------------------------
    @router.get("/u/{user_id}/entity/{name}")
    async def entity(request: Request, user_id: str, name: str) -> HTMLResponse:
        who = sessions.principal(request)
        hood: Neighbourhood = await call(
            who, "graph", lambda m: m.graph(name, user_id=user_id, tenant=who.tenant, limit=20), user_id
        )
        return render(request, "entity.html", who, user_id=user_id, hood=hood)

    @router.get("/u/{user_id}/jobs")
    async def jobs(
        request: Request, user_id: str, state: Annotated[str, Query(pattern="^(|queued|running|done|failed)$")] = ""
    ) -> HTMLResponse:
        who = sessions.principal(request)
        found: list[Job] = await call(
            who,
            "jobs",
            lambda m: m.jobs(user_id=user_id, state=JobState(state) if state else None, limit=200, tenant=who.tenant),
            user_id,
        )
        return render(
            request, "jobs.html", who, user_id=user_id, jobs=list(reversed(found)), state=state, states=list(JobState)
        )

    @router.get("/u/{user_id}/jobs/{job_id}")
    async def job(request: Request, user_id: str, job_id: str) -> HTMLResponse:
        who = sessions.principal(request)
        page = await call(who, "job", lambda m: views.job_page(m, user_id, who.tenant, job_id), user_id)
        return render(request, "job.html", who, user_id=user_id, job=page.job, messages=page.messages, page=page)

    return router


_SECURITY_HEADERS = {
    # Everything the pages load comes from this server; no inline script runs, none from elsewhere.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
