"""The client's wire format, apart from any transport: a request to make, the reply as received, and the library
error a reply stands for (the inverse of the server's ``status_of``).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from memlane.errors import (
    EmbedderMismatchError,
    JobTimeoutError,
    MemlaneError,
    NotFoundError,
    StoreError,
    ValidationError,
)

T = TypeVar("T")


class AuthenticationError(MemlaneError):
    """The server refused the API key (401): none sent, unknown or revoked."""


class PermissionDeniedError(MemlaneError):
    """The API key lacks the scope the call needs (403)."""


class RateLimitError(MemlaneError):
    """The key's request rate is spent (429); ``retry_after`` is the server's advice in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(MemlaneError):
    """The server failed (500) or answered something that is not memlane's API."""


class ServerUnavailableError(StoreError):
    """The server could not be reached, or was busy or could not open its store (503)."""


@dataclass(frozen=True)
class Request:
    """One HTTP request of the API: the transport adds the base URL and the key. ``delay`` seconds are waited
    before it is sent (polling).
    """

    method: str
    path: str
    params: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    body: Any = None
    content: str | None = None
    content_type: str | None = None
    delay: float = 0.0

    def json_body(self) -> bytes | None:
        """The body as JSON bytes (times as ISO 8601, models by their fields), or ``None`` without one."""
        if self.body is None:
            return None
        return json.dumps(to_jsonable_python(self.body, by_alias=True), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Reply:
    """A response as received."""

    status: int
    text: str
    headers: Mapping[str, str]

    def parse(self, adapter: TypeAdapter[T]) -> T:
        try:
            return adapter.validate_json(self.text)
        except ValueError as exc:
            raise ServerError(f"the server's answer does not match the API ({str(exc)[:300]})") from None


#: A call of the API as a plan: it yields the requests it needs (usually one) and is sent each reply; its return
#: value is the call's result. ``Client`` and ``AsyncClient`` run the same plans, each over its own transport.
Plan = Generator[Request, Reply, T]


def segment(value: str) -> str:
    """A path segment, escaped."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"an id must be a non-empty string, got {value!r:.60}")
    return quote(value, safe="")


def error_of(reply: Reply) -> MemlaneError:
    """The library error a 4xx/5xx reply stands for, with the server's detail as its message."""
    detail = _detail(reply.text)
    status = reply.status
    if status in (400, 413, 422):
        return ValidationError(detail)
    if status == 401:
        return AuthenticationError(detail)
    if status == 403:
        return PermissionDeniedError(detail)
    if status == 404:
        return NotFoundError(detail)
    if status == 409:
        return EmbedderMismatchError(detail)
    if status == 429:
        return RateLimitError(detail, _seconds(reply.headers.get("retry-after")))
    if status == 503:
        return ServerUnavailableError(detail)
    if status == 504:
        return JobTimeoutError(detail)
    return ServerError(f"HTTP {status}: {detail}")


def _detail(text: str) -> str:
    """The message of an error body: ``detail`` (a string, or FastAPI's list of field errors) and any ``errors``."""
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500] or "no detail"
    if not isinstance(body, dict):
        return text[:500]
    parts: list[str] = []
    for key in ("detail", "errors"):
        value = body.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts.extend(_field_error(e) for e in value)
    return "; ".join(dict.fromkeys(p for p in parts if p)) or text[:500]


def _field_error(error: object) -> str:
    if not isinstance(error, dict):
        return str(error)
    loc = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
    msg = str(error.get("msg", ""))
    return f"{loc}: {msg}" if loc else msg


def _seconds(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None
