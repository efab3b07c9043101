"""Authentication before the body: a request without a valid key is refused from its headers alone, before a byte
of its body is read, so an anonymous client cannot hold server resources by sending a body slowly (or never).

The bearer token is read as ``HTTPBearer`` reads it (scheme ``Bearer``, case-insensitive); the route's dependency
checks the scope and the rate limit afterwards, with the same key lookup. Probes and the API docs pass unchecked.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from fastapi import HTTPException

from memlane.server.limits import ASGIApp, BodyLimit, Receive, Scope, Send, has_body, refuse
from memlane.server.service import Service

#: Paths served without a key: probes and the documentation.
OPEN_PATHS = frozenset({"/health", "/ready", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})


#: The inspector's pages (memlane.server.ui): their key comes in its session cookie.
UI_PREFIX = "/ui"
UI_COOKIE = "memlane_key"  # memlane.server.ui.session.COOKIE
UI_LOGIN = "/ui/login"
#: The login form's body is read without a key: a few KB (a key is under 100 bytes), within a few seconds, and only
#: so many at once; beyond that 413, 408 or 503 (JSON), the connection closed.
LOGIN_MAX_BYTES = 4096
LOGIN_TIMEOUT = 5.0
LOGIN_RECEIVING = 32


def cookie(scope: Scope, name: str) -> str | None:
    """The value of cookie ``name`` in the request's ``Cookie`` header, or ``None``."""
    for header, value in scope.get("headers", []):
        if header == b"cookie":
            try:
                jar = SimpleCookie(value.decode("latin-1"))
            except CookieError:
                return None
            morsel = jar.get(name)
            return morsel.value or None if morsel is not None else None
    return None


def bearer(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, or ``None``."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


class KeyFirst:
    """Refuse (401) a request that carries no valid key before its body is read; the connection is closed when a
    body was announced, so the unread rest is never taken for the next request.
    """

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app, self.service = app, service
        self.login = BodyLimit(app, LOGIN_MAX_BYTES, LOGIN_TIMEOUT, LOGIN_RECEIVING)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.service.settings.insecure_dev or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        token = bearer(scope)
        path = scope.get("path", "")
        if path == UI_PREFIX or path.startswith(UI_PREFIX + "/"):
            # a bodiless page request authenticates itself (no valid key: the login form), and the login form's
            # own body (capped small, under a short deadline) carries the key; any other form needs the key first
            if not has_body(scope):
                await self.app(scope, receive, send)
                return
            if path == UI_LOGIN:
                await self.login(scope, receive, send)  # anonymous: its own small size and time limits
                return
            token = token or cookie(scope, UI_COOKIE)
        try:
            self.service.identify(token)
        except HTTPException as exc:
            await refuse(send, exc.status_code, str(exc.detail), dict(exc.headers or {}), close=has_body(scope))
            return
        await self.app(scope, receive, send)
