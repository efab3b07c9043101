"""``memlane.integrations.calls``: one adapter's logic, written once as steps, gives the same result driven blocking
or awaited, over each of ``Memory``, ``Client`` and ``AsyncClient``; a blocking call refuses an ``AsyncClient``."""

from __future__ import annotations

import anyio
import pytest

from memlane.errors import ConfigError
from memlane.integrations.calls import Steps, arun, call, is_async, request, run
from tests.integrations.conftest import Backend


def texts(user: str) -> Steps[list[str]]:
    yield request("add", ["I adopted a border collie called Pepper", "My sister lives in Lisbon"], user_id=user)
    listed = yield request("list", user_id=user, filters={"kind": "message"})
    return [m.text for m in listed]


def test_steps_run_the_same_blocking_and_awaited(backend: Backend, user: str) -> None:
    want = ["I adopted a border collie called Pepper", "My sister lives in Lisbon"]

    async def main() -> None:
        async with backend.open() as memory:
            assert is_async(memory) is backend.is_async
            assert await arun(memory, texts(user)) == want
            if backend.is_async:
                with pytest.raises(ConfigError, match="asynchronous callers only"):
                    call(memory, "list", user_id=user)
            else:
                assert run(memory, texts(f"{user}-2")) == want

    anyio.run(main)
