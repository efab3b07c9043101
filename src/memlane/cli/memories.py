"""The memory commands: add, observe, search, ask, get, list, delete and history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.common import hits_table, open_memory, progress, read_messages, read_source
from memlane.cli.options import PRESET_NAMES, DbOpt, EmbedderOpt, JsonOpt, UserOpt
from memlane.cli.output import dump, err, fail, out, show
from memlane.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.models import MemoryItem

PRESET_HELP = (
    f"Retrieval preset: {', '.join(PRESET_NAMES)}, default, convex@W (BM25 weight W from 0 to 1), "
    "or one saved by `memlane tune`."
)


def add(
    user: UserOpt,
    text: Annotated[str | None, typer.Argument(help="Text to remember (one user message).")] = None,
    file: Annotated[
        str | None, typer.Option("--file", "-f", help="JSON list or JSONL of messages; '-' reads stdin.")
    ] = None,
    session: Annotated[str | None, typer.Option("--session", help="Session id.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent id.")] = None,
    role: Annotated[str, typer.Option("--role", help="Role of a TEXT message.")] = "user",
    name: Annotated[str | None, typer.Option("--name", help="Speaker name of a TEXT message.")] = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="ISO 8601 time of the message(s).")] = None,
    infer: Annotated[
        bool | None,
        typer.Option("--infer/--no-infer", help="Extract typed memories (default: MEMLANE_INFER, else on)."),
    ] = None,
    async_mode: Annotated[
        bool, typer.Option("--async", help="Queue the extraction as a job; it runs when the store is next open.")
    ] = False,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember a message, or a file of messages."""
    if (text is None) == (file is None):
        fail("give either TEXT or --file")
    from memlane.security.validation import check_messages, check_time

    with open_memory(db, embedder) as memory:
        try:
            if text is not None:
                messages = check_messages([{"role": role, "content": text, "name": name}], memory.limits)
            else:
                messages = read_messages(str(file), memory.limits)
            if timestamp is not None:  # checked, like every message, before the first chunk is written
                check_time(timestamp, what="--timestamp", limits=memory.limits)
            stored: list[MemoryItem] = []
            extracted: list[MemoryItem] = []
            duplicates = 0
            job_ids: list[str] = []
            with progress() as bar:
                task = bar.add_task("adding", total=len(messages))
                for start in range(0, len(messages), 256):
                    chunk = messages[start : start + 256]
                    result = memory.add(
                        chunk,
                        user_id=user,
                        session_id=session,
                        agent_id=agent,
                        timestamp=timestamp,
                        infer=infer,
                        async_mode=async_mode,
                    )
                    stored.extend(result.added)
                    extracted.extend(result.memories)
                    duplicates += len(result.duplicates)
                    job_ids.extend([result.job_id] if result.job_id else [])
                    if result.queue_notice:
                        err.print(f"note: {show(result.queue_notice)}", highlight=False)
                    bar.advance(task, len(chunk))
        except MemlaneError as exc:
            fail(str(exc))
        if as_json:
            dump([it.model_dump(mode="json") for it in [*stored, *extracted]])
        else:
            out.print(f"stored {len(stored)} memor{'y' if len(stored) == 1 else 'ies'}")
            for it in stored[:20]:
                out.print(f"  {it.id}  {show(it.text[:80])}", highlight=False)
            if duplicates:
                out.print(f"{duplicates} already stored (skipped)")
            if extracted:
                out.print(f"extracted {len(extracted)} typed memor{'y' if len(extracted) == 1 else 'ies'}")
                for it in extracted[:20]:
                    out.print(f"  {it.id}  \\[{it.kind.value}] {show(it.text[:80])}", highlight=False)
            for job_id in job_ids:
                state = memory.job(job_id, user_id=user).state.value
                out.print(f"job {job_id}: {state}", highlight=False)


def observe(
    source: Annotated[str, typer.Argument(help="JSONL file of observations ('-' for stdin).")],
    user: UserOpt,
    session: Annotated[str | None, typer.Option("--session", help="Session id (default: each one's stream).")] = None,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    r"""Store grounded observations: captions with \[label:Type] tags, timestamps and media references."""
    from memlane.observe import parse_observations

    try:
        batch = parse_observations(read_source(source))
    except MemlaneError as exc:
        fail(str(exc))
    with open_memory(db, embedder) as memory:
        try:
            result = memory.observe(batch, user_id=user, session_id=session)
        except MemlaneError as exc:
            fail(str(exc))
    if as_json:
        dump(result.model_dump(mode="json"))
    else:
        out.print(f"stored {len(result.added)} observation(s), {len(result.duplicates)} already stored")


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: UserOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many results.")] = 10,
    preset_name: Annotated[str | None, typer.Option("--preset", help=PRESET_HELP)] = None,
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show raw and weighted scores.")] = False,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search a user's memories."""
    with open_memory(db, embedder) as memory:
        filters = {"session_id": session} if session else None
        try:
            hits = memory.search(query, user_id=user, top_k=top_k, filters=filters, preset_name=preset_name)
            from memlane.security.hit_flags import flag_hits

            hits = flag_hits(memory, hits, user_id=user)
        except MemlaneError as exc:
            fail(str(exc))
    if as_json:
        dump([h.model_dump(mode="json") for h in hits])
    elif not hits:
        out.print("no memories found")
    else:
        out.print(hits_table(hits, explain))


def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    user: UserOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many evidence hits.")] = 5,
    now: Annotated[str | None, typer.Option("--now", help="ISO time that relative dates count from.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show the route, the query, its SQL and result.")] = False,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question: a structured query (count, exists, list, first/last, order, range) or search."""
    with open_memory(db, embedder) as memory:
        try:
            answer = memory.ask(question, user_id=user, top_k=top_k, now=now)
        except MemlaneError as exc:
            fail(str(exc))
    if as_json:
        dump(answer.model_dump(mode="json"))
        return
    out.print(f"answer: {show(answer.answer or '(nothing found)')}", highlight=False)
    if explain:
        for line in answer.explain():
            out.print(show(line), highlight=False)
    evidence = answer.structured.memories if answer.structured else []
    for item in evidence[:top_k]:
        when = (item.event_time or item.timestamp).strftime("%Y-%m-%d %H:%M")
        out.print(f"  [dim]{when}[/] {show(item.text[:100])}  [dim]{show(item.id)}[/]", highlight=False)
    if answer.hits and (explain or not evidence):
        out.print(hits_table(answer.hits, explain))


def get(
    memory_id: Annotated[str, typer.Argument(help="Memory id.")],
    user: UserOpt,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Show one memory as JSON."""
    with open_memory(db, embedder) as memory:
        try:
            dump(memory.get(memory_id, user_id=user).model_dump(mode="json"))
        except MemlaneError as exc:
            fail(str(exc))


def list_(
    user: UserOpt,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 50,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many.")] = 0,
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List a user's memories, oldest first."""
    with open_memory(db, embedder) as memory:
        try:
            items = memory.list(
                user_id=user, limit=limit, offset=offset, filters={"session_id": session} if session else None
            )
        except MemlaneError as exc:
            fail(str(exc))
    if as_json:
        dump([it.model_dump(mode="json") for it in items])
        return
    from rich.table import Table

    table = Table()
    for col in ("id", "time", "kind", "speaker", "text"):
        table.add_column(col)
    for it in items:
        table.add_row(
            show(it.id),
            it.timestamp.isoformat(timespec="minutes"),
            it.kind.value,
            show(it.speaker or ""),
            show(it.text),
        )
    out.print(table)


def delete(
    user: UserOpt,
    memory_id: Annotated[str | None, typer.Argument(help="Memory id.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Delete every memory of the user.")] = False,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Delete one memory, or all of a user's memories with --all."""
    if (memory_id is None) == (not all_):
        fail("give either MEMORY_ID or --all")
    with open_memory(db, embedder) as memory:
        try:
            if all_:
                out.print(f"deleted {memory.delete_all(user_id=user)} memories of {show(user)}", highlight=False)
            else:
                memory.delete(str(memory_id), user_id=user)
                out.print(f"deleted {show(str(memory_id))}", highlight=False)
        except MemlaneError as exc:
            fail(str(exc))


def history(
    memory_id: Annotated[str, typer.Argument(help="Memory id.")],
    user: UserOpt,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Show every recorded change of a memory as JSON."""
    with open_memory(db, embedder) as memory:
        try:
            dump([h.model_dump(mode="json") for h in memory.history(memory_id, user_id=user)])
        except MemlaneError as exc:
            fail(str(exc))
