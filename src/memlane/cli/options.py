"""Command-line options shared by several ``memlane`` commands (kept apart so that every command module can use them)."""

from __future__ import annotations

from typing import Annotated

import typer

#: A store: a SQLite file or a store URL. A ``str``, not a ``Path``: a path would fold ``sqlite:///x.db?...``.
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="MEMLANE_DB",
        help="SQLite file or store URL, e.g. postgresql://HOST/DB or sqlite:///m.db?vectors=qdrant://HOST "
        "(default: $MEMLANE_HOME/memlane.db).",
    ),
]
