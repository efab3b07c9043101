"""The memory inspector at ``/ui`` and Swagger UI at ``/docs``, both served from files inside the package (nothing
is fetched from elsewhere at run time, so both work offline).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from memlane.server.service import Service
from memlane.server.ui.pages import HERE, build_router, render_error
from memlane.server.ui.session import LoginNeeded, PageError, Sessions

STATIC = HERE / "static"


def mount_inspector(app: FastAPI, svc: Service) -> None:
    """Add the inspector's pages, its static files, and the offline Swagger UI to ``app`` (created with
    ``docs_url=None``).
    """
    sessions = Sessions(svc)
    router = build_router(svc, sessions)
    app.include_router(router)
    app.mount("/ui/static", StaticFiles(directory=Path(STATIC)), name="ui-static")

    @app.exception_handler(LoginNeeded)
    async def login_needed(_: Request, __: LoginNeeded) -> Response:
        return RedirectResponse("/ui/login", status_code=303)

    @app.exception_handler(PageError)
    async def page_error(request: Request, exc: PageError) -> Response:
        return render_error(request, exc, sessions)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title="memlane API",
            swagger_js_url="/ui/static/swagger/swagger-ui-bundle.js",
            swagger_css_url="/ui/static/swagger/swagger-ui.css",
            swagger_favicon_url="/ui/static/swagger/favicon-32x32.png",
        )
