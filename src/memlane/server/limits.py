"""Overload protection: a cap on requests in flight (503) and a request-size and time limit enforced before anything
parses the body (413, 408); every refusal carries ``Retry-After`` where waiting helps. Per-key rate limits (429) are
in ``memlane.server.ratelimit``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))


async def refuse(
    send: Send, status: int, detail: str, headers: dict[str, str] | None = None, *, close: bool = False
) -> None:
    """Answer ``{"detail": ..., "errors": []}``; ``close``: end the connection after it (a body left unread must not
    keep it open, nor be read as the next request).
    """
    body = json.dumps({"detail": detail, "errors": []}).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def has_body(scope: Scope) -> bool:
    """Whether a request announces a body (a non-zero ``Content-Length``, or chunked)."""
    for name, value in scope.get("headers", []):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"0", b"")):
            return True
    return False


class BodyLimit:
    """Read a request's body whole before the app sees it, within limits: at most ``max_bytes`` (413, by its
    ``Content-Length`` before reading a byte, and by counting while it streams in), within ``timeout`` seconds from
    the first byte asked for to the last (408), and at most ``max_receiving`` bodies being received at once (503).
    A refusal closes the connection. Requests in this phase are not counted as in flight: a client that sends a
    body slowly holds a connection and a small slot here, never one of the slots that serve requests.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float = 10.0, max_receiving: int = 256) -> None:
        self.app, self.max_bytes, self.timeout, self.max_receiving = app, max_bytes, timeout, max_receiving
        self.receiving = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = f"request body larger than the limit of {self.max_bytes} bytes"
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await refuse(send, 400, "Content-Length is not a number", close=True)
                    return
                if declared > self.max_bytes:
                    await refuse(send, 413, too_big, close=True)
                    return
        if not has_body(scope):
            await self.app(scope, receive, send)
            return
        if self.receiving >= self.max_receiving:
            await refuse(
                send, 503, "too many request bodies in transit; retry shortly", {"Retry-After": "1"}, close=True
            )
            return
        chunks: list[bytes] = []
        size = 0
        self.receiving += 1  # the event loop is single-threaded: no lock needed
        try:
            with anyio.fail_after(self.timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_bytes:
                        await refuse(send, 413, too_big, close=True)
                        return
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await refuse(send, 408, f"request body not received within {self.timeout:g} s", close=True)
            return
        finally:
            self.receiving -= 1
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class InFlightLimit:
    """Refuse with 503 and ``Retry-After`` once ``max_inflight`` requests are already being served, so overload
    turns into fast refusals instead of a queue that grows until requests hang. Probes (``exempt``) always pass.
    """

    def __init__(self, app: ASGIApp, max_inflight: int, exempt: frozenset[str] = frozenset()) -> None:
        self.app, self.max_inflight, self.exempt = app, max_inflight, exempt
        self.inflight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.exempt:
            await self.app(scope, receive, send)
            return
        if self.inflight >= self.max_inflight:
            await refuse(send, 503, "server busy; retry shortly", {"Retry-After": "1"})
            return
        self.inflight += 1  # the event loop is single-threaded: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.inflight -= 1
