"""Overload protection: a cap on requests in flight (503) and a request-size limit enforced before anything parses
the body (413); every refusal carries ``Retry-After`` where waiting helps. Per-key rate limits (429) are in
``memlane.server.ratelimit``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))


async def _refuse(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuse a body over ``max_bytes`` with 413: by its ``Content-Length`` before reading a byte, and by counting
    while it streams in (a chunked body, or a length that lies). The body is buffered up to the limit and handed to
    the app whole, so nothing downstream parses a byte of a request that will be refused.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

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
                    await _refuse(send, 400, "Content-Length is not a number")
                    return
                if declared > self.max_bytes:
                    await _refuse(send, 413, too_big)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _refuse(send, 413, too_big)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
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
            await _refuse(send, 503, "server busy; retry shortly", {"Retry-After": "1"})
            return
        self.inflight += 1  # the event loop is single-threaded: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.inflight -= 1
