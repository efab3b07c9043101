"""Strict input at the HTTP edge, and one error shape for every refusal.

A request body is parsed by ``strict_json``: UTF-8 only, no duplicate keys (where "last wins" lets two readers of one
body disagree), no ``NaN``/``Infinity`` or numbers that overflow to them, no lone surrogates in any string or key
(they cannot be stored, logged or echoed as UTF-8). Each refusal is a ``json.JSONDecodeError`` naming the problem,
which FastAPI turns into a validation error like any schema violation; the request models are strict pydantic
models (no ``"5"`` for 5, no ``1`` for true). Every error answers ``{"detail": "...", "errors": [...]}``: validation
failures at 400 with one entry per problem (location, message, type, never the offending value), other errors with
an empty list.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import FastAPI, Request, Response, params
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from memlane.security.edge_limits import limits_in_effect
from memlane.security.validation import Limits


def _refuse(message: str, doc: str = "", pos: int = 0) -> json.JSONDecodeError:
    return json.JSONDecodeError(message, doc, pos)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _refuse(f"duplicate key {safe(key)[:60]!r} in a JSON object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _refuse(f"{name} is not a JSON number (non-finite numbers are refused)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _refuse(f"the number {text[:40]} is out of range")
    return value


def _no_surrogates(value: Any, path: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _refuse(f"{path or 'body'}: lone surrogate at character {exc.start} (not valid Unicode)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_surrogates(key, f"{path} key")
            _no_surrogates(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _no_surrogates(item, f"{path}[{i}]")


def strict_json(raw: bytes) -> Any:
    """The JSON value of a request body, or ``json.JSONDecodeError`` naming why it is refused."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(f"the body is not UTF-8 (byte {exc.start})") from None
    value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)
    _no_surrogates(value, "")
    return value


class StrictRequest(Request):
    """A request whose JSON body is read by ``strict_json``."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json(await self.body())
        return self._json


def is_json_type(content_type: str) -> bool:
    """Whether a Content-Type names JSON (``application/json`` or ``application/...+json``, any parameters)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class StrictRoute(APIRoute):
    """A route that reads its body as a ``StrictRequest``. A JSON-bodied route refuses a body declared as another
    type, or sent with no type, as 415, where FastAPI would hand the raw bytes to the schema and answer that an object
    is not an object (``curl -d`` without ``-H 'Content-Type: application/json'`` sends a form type).
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        field = self.body_field
        json_body = field is not None and not isinstance(field.field_info, params.Form)

        async def strict_handler(request: Request) -> Response:
            if json_body:
                declared = request.headers.get("content-type")
                sent = request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers
                if (declared is None and sent) or (declared is not None and not is_json_type(declared)):
                    shown = "none" if declared is None else repr(safe(declared[:100]))
                    return problem(415, f"the body must be JSON, sent as Content-Type: application/json (got {shown})")
            return await handler(StrictRequest(request.scope, request.receive))

        return strict_handler


def safe(text: str) -> str:
    """``text`` encodable as UTF-8 (a lone surrogate shown as its escape)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def problem(
    status: int, detail: str, errors: list[dict[str, Any]] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The one error body: ``{"detail": ..., "errors": [...]}``."""
    return JSONResponse({"detail": safe(detail), "errors": errors or []}, status_code=status, headers=headers)


def _entry(error: Any) -> dict[str, Any]:
    loc = [part if isinstance(part, int) else safe(str(part)) for part in error.get("loc", ())]
    msg = safe(str(error.get("msg", "invalid")))
    ctx = error.get("ctx") or {}
    if error.get("type") == "json_invalid" and isinstance(ctx.get("error"), str):
        msg = f"invalid JSON: {safe(ctx['error'])}"
    return {"loc": loc, "msg": msg, "type": safe(str(error.get("type", "invalid")))}


def validation_problem(exc: RequestValidationError) -> JSONResponse:
    """400 for a request that fails its schema, naming each problem by location (never echoing its value)."""
    errors = [_entry(e) for e in exc.errors()]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"])
    detail = f"{where}: {first['msg']}" if where else str(first["msg"])
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more)"
    return problem(400, detail, errors)


class LimitsInEffect:
    """ASGI middleware: each request is checked with the limits of the server's store (``memlane.security.edge_limits``)."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with limits_in_effect(self.limits):
            await self.app(scope, receive, send)


def install(app: FastAPI, limits: Limits) -> None:
    """Strict bodies on every route added after this, checked and documented with the store's ``limits``, the one
    error shape, and an OpenAPI document saying so.
    """
    app.router.route_class = StrictRoute
    app.add_middleware(LimitsInEffect, limits=limits)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_problem(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return problem(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            with limits_in_effect(limits):
                schema = plain()
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
