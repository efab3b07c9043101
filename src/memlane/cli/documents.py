"""``memlane add-docs FILE...``: store files (or JSONL records) as documents, each a memory of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memlane.cli.options import DbOpt, EmbedderOpt
from memlane.cli.output import dump, fail, out, show
from memlane.errors import MemlaneError, ValidationError

if TYPE_CHECKING:
    from memlane.models import MemoryItem

#: Documents per ``add_documents`` call.
BATCH = 200


def _read(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise ValidationError(f"{path[:200]}: is a directory, not a file") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {path[:200]!r}: {exc.strerror or type(exc).__name__}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path[:200]}: not UTF-8 text (byte {exc.start})") from None


def read_documents(paths: list[str], *, jsonl: bool) -> list[str | dict[str, Any]]:
    """Each file as one document (its path as the source, its name as the title), or each line of JSONL files as
    one (``{"text", "title", "source", "timestamp", "metadata"}``, or a string). The library checks every field.
    """
    docs: list[str | dict[str, Any]] = []
    for path in paths:
        text = _read(path)
        if not jsonl:
            docs.append({"text": text, "title": Path(path).name, "source": path})
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                raise ValidationError(f"{path}: line {n} is not JSON") from None
            if not isinstance(row, str | dict):
                raise ValidationError(f"{path}: line {n} must be an object or a string")
            docs.append(row)
    if not docs:
        raise ValidationError("no documents in the given files")
    return docs


def add_docs(
    files: Annotated[list[str], typer.Argument(help="Text files, one document each (or JSONL with --jsonl).")],
    user: Annotated[str, typer.Option("--user", "-u", help="The user scope (required).")],
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help='Each line of each file is a document: {"text", "title", "source", ...}.')
    ] = False,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent id.")] = None,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")] = False,
) -> None:
    """Remember documents or notes: no session, no neighbours; long texts are embedded passage by passage."""
    stored: list[MemoryItem] = []
    duplicates = 0
    from memlane.config import Config
    from memlane.engine import Memory

    try:
        docs = read_documents(files, jsonl=jsonl)
        with Memory(db, embedder=embedder, config=Config.from_env()) as memory:
            for start in range(0, len(docs), BATCH):
                result = memory.add_documents(docs[start : start + BATCH], user_id=user, agent_id=agent)
                stored.extend(result.added)
                duplicates += len(result.duplicates)
    except MemlaneError as exc:
        fail(str(exc))
    if as_json:
        dump([it.model_dump(mode="json") for it in stored])
        return
    out.print(f"stored {len(stored)} document{'' if len(stored) == 1 else 's'}")
    for it in stored[:20]:
        title = it.metadata.get("title") or it.text[:60]
        out.print(f"  {it.id}  {show(str(title)[:80])}", highlight=False)
    if duplicates:
        out.print(f"{duplicates} already stored (skipped)")
