"""The inspector's session: the API key in a cookie, the caller it authenticates, and CSRF tokens for its forms.

The key is kept in an ``HttpOnly`` cookie (``Secure`` when the request came over https, ``SameSite=Strict``), never in
a URL. Every form that changes something carries a token derived from that key (HMAC-SHA256 keyed by it): a page of
another site can neither read the key nor compute the token, and thanks to ``SameSite=Strict`` cannot send the cookie.
Being derived from the key alone, the token is the same on every server process behind a load balancer.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from fastapi import HTTPException, Request, Response
from fastapi.security import HTTPAuthorizationCredentials

from memlane.server.keys import Scope
from memlane.server.service import Principal, Service
from memlane.server.ui.throttle import FailedLogins

COOKIE = "memlane_key"
MAX_AGE = 8 * 3600  # a login lasts a working day


class LoginNeeded(Exception):
    """No valid key in the cookie: the page answers with a redirect to the login form."""


class PageError(Exception):
    """A page that cannot be shown: rendered as an error page with this status and message."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass
class Sessions:
    """Reads and writes the key cookie; issues and checks CSRF tokens."""

    svc: Service
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))  # insecure-dev's sessions (no key)
    failures: FailedLogins = field(default_factory=FailedLogins)

    def key_of(self, request: Request) -> str:
        return request.cookies.get(COOKIE, "")

    def principal(self, request: Request, need: Scope = Scope.READ, key: str | None = None) -> Principal:
        """The caller behind the cookie's key (or ``key``), holding ``need`` (``LoginNeeded`` or ``PageError``
        otherwise).
        """
        key = self.key_of(request) if key is None else key
        if not key and not self.svc.settings.insecure_dev:
            raise LoginNeeded
        creds = HTTPAuthorizationCredentials(scheme="Bearer", credentials=key) if key else None
        try:
            return self.svc.authenticate(request, creds, need)
        except HTTPException as exc:
            if exc.status_code == 401:
                raise LoginNeeded from None
            raise PageError(exc.status_code, str(exc.detail)) from None

    def login(self, response: Response, request: Request, key: str) -> None:
        response.set_cookie(
            COOKIE,
            key,
            max_age=MAX_AGE,
            path="/ui",
            httponly=True,
            secure=request.url.scheme == "https",
            samesite="strict",
        )

    def logout(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/ui")

    def csrf_token(self, request: Request) -> str:
        """The token this session's forms carry (empty without a session)."""
        key = self.key_of(request)
        return hmac.new(key.encode("utf-8"), b"memlane-ui-csrf", hashlib.sha256).hexdigest() if key else ""

    def check_csrf(self, request: Request, token: str) -> None:
        """Refuse (403) a form whose token is not this session's, or that another origin submitted."""
        origin = request.headers.get("origin")
        if origin is not None and origin != "null":
            expected = f"{request.url.scheme}://{request.url.netloc}"
            if origin != expected:
                raise PageError(403, "this form was submitted from another site")
        want = self.csrf_token(request)
        if not want and self.svc.settings.insecure_dev:
            want = hmac.new(self.secret, b"", hashlib.sha256).hexdigest()
        if not token or not hmac.compare_digest(token, want):
            raise PageError(403, "the form's security token is missing or stale; reload the page and try again")

    def form_token(self, request: Request) -> str:
        """What a rendered form embeds (in insecure-dev mode without a cookie, a token of the empty session)."""
        token = self.csrf_token(request)
        if not token and self.svc.settings.insecure_dev:
            token = hmac.new(self.secret, b"", hashlib.sha256).hexdigest()
        return token
