"""Each adapter runs over the three things that serve memlane's methods: an embedded ``Memory``, a ``Client`` and an
``AsyncClient`` of a real ``memlane serve`` (one server per test module, started only when a module asks for it).

``backend`` is parametrized over the three. An async scenario opens its memory inside its own event loop
(``async with backend.open() as memory``), since an ``AsyncClient``'s connections belong to the loop that made them;
each test acts for its own user, so tests sharing a server never see each other's memories.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory

KINDS = ["memory", "client", "async_client"]


@dataclass
class Backend:
    kind: str
    served: tuple[str, str] | None  # (url, admin key) of the module's server; None for "memory"

    @property
    def is_async(self) -> bool:
        return self.kind == "async_client"

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        """The memory to hand an adapter, opened in the running event loop and closed after."""
        if self.kind == "async_client":
            from memlane.client import AsyncClient

            assert self.served is not None
            async with AsyncClient(self.served[0], api_key=self.served[1]) as client:
                yield client
            return
        with self.open_sync() as memory:
            yield memory

    @contextmanager
    def open_sync(self) -> Iterator[Any]:
        """The memory for a synchronous flow: a ``Memory`` or a ``Client`` (an ``AsyncClient`` needs a loop)."""
        if self.kind == "memory":
            with Memory(":memory:", embedder="hash") as memory:
                yield memory
            return
        from memlane.client import Client

        assert self.kind == "client" and self.served is not None
        with Client(self.served[0], api_key=self.served[1]) as client:
            yield client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    pytest.importorskip("fastapi", reason="starts a real server: memlane[server]")
    pytest.importorskip("httpx", reason="the HTTP client needs memlane[client]")
    from memlane.bench.load import spawned_server

    home: Path = tmp_path_factory.mktemp("served")
    with spawned_server("hash", home) as pair:
        yield pair


@pytest.fixture(params=KINDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    kind: str = request.param
    return Backend(kind, None if kind == "memory" else request.getfixturevalue("served"))


@pytest.fixture
def user() -> str:
    """A user of this test's own (a module's tests share one server)."""
    return f"maya-{uuid.uuid4().hex[:10]}"
