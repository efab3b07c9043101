"""The MCP tools keep the limits of the store they serve: with ``max_text_chars`` and ``max_id_chars`` raised or
lowered, a text, an id or a timeline cursor of the limit is accepted and one more is a tool error naming the field
and the limit (the library's), and each tool's input schema states the limit in effect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client
from memlane import Memory
from memlane.config import Config
from memlane.mcp.scope import McpScope
from memlane.mcp.server import build_server

CURSOR_TIME = "2024-03-01T09:00:00+00:00|"  # a cursor is '<time>|<memory id>': the rest of its length is the id


@pytest.fixture(params=[(40_000, 600), (100, 40)], ids=["raised", "lowered"])
def limits(request: pytest.FixtureRequest) -> tuple[int, int]:
    return tuple(request.param)  # type: ignore[return-value]


@pytest.fixture
def memory(tmp_path: Path, limits: tuple[int, int]) -> Iterator[Memory]:
    text_chars, id_chars = limits
    config = Config(data_dir=tmp_path, background_worker=False, max_text_chars=text_chars, max_id_chars=id_chars)
    with Memory(":memory:", embedder="hash", config=config) as m:
        yield m


def _run(memory: Memory, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    server = build_server(memory, McpScope())  # every call names its user, an id of the store's limit

    async def main() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in steps]

    return anyio.run(main)


def _refused(result: Any, what: str, limit: int) -> None:
    assert result.is_error, result.content
    assert f"{what} is {limit + 1} characters, more than the limit of {limit}" in result.content[0].text


def test_a_text_of_the_limit_is_accepted_and_one_more_refused(memory: Memory, limits: tuple[int, int]) -> None:
    n, _ = limits
    stored, over_add, found, over_search, ctx, over_ctx = _run(
        memory,
        ("add", {"text": "a" * n, "user_id": "ana"}),
        ("add", {"text": "a" * (n + 1), "user_id": "ana"}),
        ("search", {"query": "b" * n, "user_id": "ana"}),
        ("search", {"query": "b" * (n + 1), "user_id": "ana"}),
        ("context", {"prompt": "c" * n, "user_id": "ana"}),
        ("context", {"prompt": "c" * (n + 1), "user_id": "ana"}),
    )
    assert not stored.is_error and not found.is_error and not ctx.is_error, (stored, found, ctx)
    _refused(over_add, "message 0 content", n)
    _refused(over_search, "query", n)
    _refused(over_ctx, "query", n)


def test_an_id_and_a_cursor_of_the_limit_are_accepted_and_one_more_refused(
    memory: Memory, limits: tuple[int, int]
) -> None:
    _, n = limits
    cursor = CURSOR_TIME + "m" * (n + 64 - len(CURSOR_TIME))
    stored, over_user, page, over_cursor = _run(
        memory,
        ("add", {"text": "hello", "user_id": "u" * n}),
        ("add", {"text": "hello", "user_id": "u" * (n + 1)}),
        ("timeline", {"user_id": "ana", "after": cursor}),
        ("timeline", {"user_id": "ana", "after": cursor + "m"}),
    )
    assert not stored.is_error and not page.is_error, (stored.content, page.content)
    _refused(over_user, "user_id", n)
    _refused(over_cursor, "after", n + 64)


def test_the_tools_schemas_state_the_limits_in_effect(memory: Memory, limits: tuple[int, int]) -> None:
    text_chars, id_chars = limits
    server = build_server(memory, McpScope())

    async def main() -> dict[str, dict[str, Any]]:
        async with Client(server) as client:
            return {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}

    tools = anyio.run(main)
    assert tools["add"]["text"]["maxLength"] == text_chars
    assert tools["search"]["query"]["maxLength"] == text_chars
    assert tools["get"]["memory_id"]["maxLength"] == id_chars
    assert [s.get("maxLength") for s in tools["search"]["user_id"]["anyOf"]] == [id_chars, None]
    assert [s.get("maxLength") for s in tools["timeline"]["after"]["anyOf"]] == [id_chars + 64, None]
    assert tools["timeline"]["limit"]["maximum"] == memory.limits.top_k
