"""``memlane mcp``: serve a store to MCP clients over stdio or streamable HTTP."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import typer

from memlane.cli.common import lazy_memory, memory_type
from memlane.cli.options import DbOpt, EmbedderOpt, env_config
from memlane.cli.output import fail
from memlane.errors import MemlaneError


def __getattr__(name: str) -> Any:
    return lazy_memory(__name__, name)


def mcp_command(
    transport: Annotated[
        str, typer.Option("--transport", "-t", help="stdio (a desktop client starts the server) or http.")
    ] = "stdio",
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="Serve this user only (otherwise every call names its user_id)."),
    ] = None,
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant the calls act in.")] = "default",
    host: Annotated[str, typer.Option("--host", help="HTTP: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP: the port to listen on.")] = 8765,
    path: Annotated[str, typer.Option("--path", help="HTTP: the endpoint path.")] = "/mcp",
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Serve memory to MCP clients: tools add, search, context, ask, get, list, timeline, update, delete and graph;
    recent memories as resources.
    """
    if transport not in ("stdio", "http", "streamable-http"):
        fail(f"unknown transport {transport!r}; choose stdio or http")
    logging.basicConfig(level=logging.WARNING)  # to stderr: stdout carries the protocol over stdio
    try:
        from memlane.mcp.scope import McpScope
        from memlane.mcp.server import serve

        config = env_config()
        scope = McpScope(user_id=user, tenant=tenant, max_id_chars=config.max_id_chars)
        with memory_type(__name__)(db, embedder=embedder, config=config) as memory:
            serve(
                memory,
                scope,
                transport="stdio" if transport == "stdio" else "streamable-http",
                host=host,
                port=port,
                path=path,
            )
    except MemlaneError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot serve: {exc.strerror or exc}")
