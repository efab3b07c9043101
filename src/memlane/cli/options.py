"""Command-line options shared by several ``memlane`` commands (kept apart so that every command module can use them).

This module imports nothing but typer: it is read at every start of the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from memlane.config import Config

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
EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        envvar="MEMLANE_EMBEDDER",
        help="minilm (default: the store's MiniLM, q8 for a new one), minilm-int8, minilm-fp32, static, or openai:MODEL@URL.",
    ),
]
UserOpt = Annotated[str, typer.Option("--user", "-u", help="The user scope (required).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]

#: The built-in retrieval presets, named here rather than read from ``memlane.config`` (which loads numpy and the
#: enrichment rules): ``tests/cli`` keeps this tuple equal to ``memlane.config.PRESETS``.
PRESET_NAMES = ("bm25", "dense", "weighted", "blend", "rrf", "convex", "multi", "multi-graph", "imdmr")

#: Options every command that opens a store takes, accepted before the command too (``memlane --db X add ...``).
GLOBAL_OPTIONS = ("--db", "--embedder")


def env_config() -> Config:
    """The settings from the environment, read when a command runs (``memlane.config`` is not loaded at start-up)."""
    from memlane.config import Config

    return Config.from_env()
