"""One memlane call from an adapter, whatever serves it: a ``Memory``, a ``Client`` or an ``AsyncClient``.

The three have the same method names, arguments and results; ``AsyncClient``'s methods are coroutines. From a
framework's async code path ``acall`` awaits an ``AsyncClient``'s coroutine natively and runs the blocking ``Memory``
or ``Client`` call on a worker thread, so the event loop never blocks. From a synchronous path ``call`` runs the
blocking call, and refuses an ``AsyncClient`` with an error that names the way out.

An adapter whose logic makes several calls writes it once as ``Steps``: a generator that yields each ``Call`` and is
sent its result; ``run`` drives it blocking and ``arun`` asynchronously, so no logic is kept twice.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from memlane.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One memlane method call: ``memory.<name>(*args, **kwargs)``."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def request(name: str, /, *args: Any, **kwargs: Any) -> Call:
    """The call ``memory.<name>(*args, **kwargs)``, for a ``Steps`` generator to yield."""
    return Call(name, args, kwargs)


#: An adapter's logic: yields the calls it makes, is sent each one's result, returns its own result.
Steps: TypeAlias = Generator[Call, Any, T]


def is_async(memory: object) -> bool:
    """Whether ``memory``'s methods are coroutines (an ``AsyncClient``)."""
    return inspect.iscoroutinefunction(getattr(memory, "add", None))


async def acall(memory: object, name: str, /, *args: Any, **kwargs: Any) -> Any:
    """``memory.<name>(*args, **kwargs)`` from async code: awaited when it is a coroutine, else on a thread."""
    method = getattr(memory, name)
    if inspect.iscoroutinefunction(method):
        return await method(*args, **kwargs)
    return await asyncio.to_thread(method, *args, **kwargs)


def call(memory: object, name: str, /, *args: Any, **kwargs: Any) -> Any:
    """``memory.<name>(*args, **kwargs)`` from blocking code; an ``AsyncClient`` is a ``ConfigError`` here."""
    method = getattr(memory, name)
    if inspect.iscoroutinefunction(method):
        raise ConfigError(
            f"{type(memory).__name__} serves asynchronous callers only: use the framework's async interface "
            "(ainvoke, abatch, achat, ...) with it, or pass a memlane.client.Client or a Memory"
        )
    return method(*args, **kwargs)


def run(memory: object, steps: Steps[T]) -> T:
    """Drive ``steps`` with blocking calls."""
    try:
        step = next(steps)
        while True:
            step = steps.send(call(memory, step.name, *step.args, **step.kwargs))
    except StopIteration as done:
        result: T = done.value
        return result


async def arun(memory: object, steps: Steps[T]) -> T:
    """Drive ``steps`` from async code (see ``acall``)."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await acall(memory, step.name, *step.args, **step.kwargs))
    except StopIteration as done:
        result: T = done.value
        return result
