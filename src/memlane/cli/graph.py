"""``memlane graph ENTITY``: the neighbourhood of an entity in a user's knowledge graph, as text or JSON."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from memlane.cli.options import DbOpt, EmbedderOpt, env_config
from memlane.cli.output import dump, fail, out, show
from memlane.errors import MemlaneError


def graph(
    entity: Annotated[str, typer.Argument(help="An entity's name or alias (e.g. 'Anna', 'Mel', 'my sister').")],
    user: Annotated[str, typer.Option("--user", "-u", help="The user scope (required).")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many of its latest memories to show.")] = 10,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")] = False,
) -> None:
    """Show an entity's neighbourhood: its type and aliases, its relations, what it is mentioned with, its memories."""
    from memlane.engine import Memory

    try:
        with Memory(db, embedder=embedder, config=env_config()) as memory:
            found = memory.graph(entity, user_id=user, limit=limit)
    except MemlaneError as exc:
        fail(str(exc))
    if as_json:
        data = dataclasses.asdict(dataclasses.replace(found, memories=[]))
        data["memories"] = [m.model_dump(mode="json") for m in found.memories]
        dump(data)
    else:
        out.print(show(found.as_text()), highlight=False)
