"""``Client`` and ``AsyncClient``: the plans of ``memlane.client.plans`` run over httpx, blocking or asynchronous.
Each method is bound from its plan, so both clients have exactly the plan's signature and behaviour.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

import memlane.client.plans as plans
import memlane.client.plans_more as plans_more
from memlane.client.wire import Plan, Reply, Request, ServerUnavailableError, error_of

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", bound="Client")
A = TypeVar("A", bound="AsyncClient")
DEFAULT_TIMEOUT = 60.0


def _headers(api_key: str | None) -> dict[str, str]:
    key = api_key if api_key is not None else os.environ.get("MEMLANE_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def _send_args(request: Request) -> dict[str, Any]:
    headers: dict[str, str] = {}
    content: bytes | str | None = request.json_body()
    if content is not None:
        headers["Content-Type"] = "application/json"
    elif request.content is not None:
        content = request.content.encode("utf-8")
        headers["Content-Type"] = request.content_type or "text/plain"
    return {"params": dict(request.params), "content": content, "headers": headers}


def _reply(response: httpx.Response) -> Reply:
    reply = Reply(response.status_code, response.text, response.headers)
    if response.status_code >= 400:
        raise error_of(reply)
    return reply


def _unreachable(exc: httpx.TransportError, base: httpx.URL) -> ServerUnavailableError:
    return ServerUnavailableError(f"memlane server at {base} unreachable: {type(exc).__name__}: {exc}")


def _sync(build: Callable[P, Plan[T]]) -> Callable[Concatenate[Client, P], T]:
    @functools.wraps(build)
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.run(build(*args, **kwargs))

    return method


def _async(build: Callable[P, Plan[T]]) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    @functools.wraps(build)
    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.run(build(*args, **kwargs))

    return method


class Client:
    """A memlane server, called with ``Memory``'s methods: ``Client(url, api_key=...)`` stands in for
    ``Memory(...)`` (results are the same models; errors the same ``MemlaneError`` classes, plus
    ``AuthenticationError``, ``PermissionDeniedError`` and ``RateLimitError``). The key defaults to
    ``$MEMLANE_API_KEY``.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(base_url=url, headers=_headers(api_key), timeout=timeout, transport=transport)

    def run(self, plan: Plan[T]) -> T:
        """Run a plan: send each request it yields, hand it the reply, return what it returns."""
        try:
            request = next(plan)
            while True:
                if request.delay:
                    time.sleep(request.delay)
                try:
                    response = self._http.request(request.method, request.path, **_send_args(request))
                except httpx.TransportError as exc:
                    raise _unreachable(exc, self._http.base_url) from exc
                request = plan.send(_reply(response))
        except StopIteration as done:
            result: T = done.value
            return result

    def close(self) -> None:
        self._http.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    add = _sync(plans.add)
    search = _sync(plans.search)
    ask = _sync(plans.ask)
    context = _sync(plans.context)
    observe = _sync(plans.observe)
    feedback = _sync(plans.feedback)
    get = _sync(plans.get)
    list = _sync(plans.list_)
    timeline = _sync(plans_more.timeline)
    history = _sync(plans.history)
    flagged = _sync(plans.flagged)
    update = _sync(plans.update)
    delete = _sync(plans.delete)
    delete_all = _sync(plans.delete_all)
    graph = _sync(plans_more.graph)
    relations = _sync(plans_more.relations)
    routines = _sync(plans_more.routines)
    archive = _sync(plans_more.archive)
    restore = _sync(plans_more.restore)
    export = _sync(plans.export)
    import_ = _sync(plans.import_)
    stats = _sync(plans.stats)
    job = _sync(plans.job)
    jobs = _sync(plans.jobs)
    job_result = _sync(plans.job_result)
    wait = _sync(plans.wait)
    forget = _sync(plans_more.forget)
    merge_entities = _sync(plans_more.merge_entities)
    split_entity = _sync(plans_more.split_entity)
    retry_jobs = _sync(plans_more.retry_jobs)
    create_key = _sync(plans_more.create_key)
    list_keys = _sync(plans_more.list_keys)
    revoke_key = _sync(plans_more.revoke_key)


class AsyncClient:
    """``Client`` for asyncio: the same methods, each a coroutine."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(base_url=url, headers=_headers(api_key), timeout=timeout, transport=transport)

    async def run(self, plan: Plan[T]) -> T:
        """Run a plan: send each request it yields, hand it the reply, return what it returns."""
        try:
            request = next(plan)
            while True:
                if request.delay:
                    await asyncio.sleep(request.delay)
                try:
                    response = await self._http.request(request.method, request.path, **_send_args(request))
                except httpx.TransportError as exc:
                    raise _unreachable(exc, self._http.base_url) from exc
                request = plan.send(_reply(response))
        except StopIteration as done:
            result: T = done.value
            return result

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self: A) -> A:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()

    add = _async(plans.add)
    search = _async(plans.search)
    ask = _async(plans.ask)
    context = _async(plans.context)
    observe = _async(plans.observe)
    feedback = _async(plans.feedback)
    get = _async(plans.get)
    list = _async(plans.list_)
    timeline = _async(plans_more.timeline)
    history = _async(plans.history)
    flagged = _async(plans.flagged)
    update = _async(plans.update)
    delete = _async(plans.delete)
    delete_all = _async(plans.delete_all)
    graph = _async(plans_more.graph)
    relations = _async(plans_more.relations)
    routines = _async(plans_more.routines)
    archive = _async(plans_more.archive)
    restore = _async(plans_more.restore)
    export = _async(plans.export)
    import_ = _async(plans.import_)
    stats = _async(plans.stats)
    job = _async(plans.job)
    jobs = _async(plans.jobs)
    job_result = _async(plans.job_result)
    wait = _async(plans.wait)
    forget = _async(plans_more.forget)
    merge_entities = _async(plans_more.merge_entities)
    split_entity = _async(plans_more.split_entity)
    retry_jobs = _async(plans_more.retry_jobs)
    create_key = _async(plans_more.create_key)
    list_keys = _async(plans_more.list_keys)
    revoke_key = _async(plans_more.revoke_key)
