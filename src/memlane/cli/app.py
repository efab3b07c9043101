"""The ``memlane`` command line: a thin adapter over the ``Memory`` API."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from memlane.cli.bench import bench_app
from memlane.cli.bench_ui import bench_inspector  # noqa: F401  (registers `memlane bench inspector`)
from memlane.cli.graph import graph
from memlane.cli.mcp import mcp_command
from memlane.cli.migrate import migrate_command
from memlane.cli.options import DbOpt
from memlane.cli.output import OneLineErrors, dump, err, fail, out, show
from memlane.cli.server import keys_app, serve
from memlane.cli.worker import worker_command
from memlane.config import PRESETS, Config
from memlane.engine import Memory
from memlane.errors import MemlaneError, ValidationError
from memlane.models import Hit, MemoryItem, Message
from memlane.security.validation import Limits, check_messages, check_time

app = typer.Typer(
    name="memlane",
    cls=OneLineErrors,
    help="Long-term memory for conversational AI: offline, embedded, explainable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(bench_app, name="bench")
app.add_typer(keys_app, name="keys")
app.command()(serve)
app.command(name="mcp")(mcp_command)
app.command(name="worker")(worker_command)
app.command(name="graph")(graph)
app.command(name="migrate")(migrate_command)

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


@contextmanager
def open_memory(db: str | Path | None, embedder: str | None) -> Iterator[Memory]:
    """A Memory for one command, with memlane errors turned into a clean exit."""
    try:
        config = Config.from_env()
        with Memory(db, embedder=embedder, config=config) as memory:
            yield memory
    except MemlaneError as exc:
        fail(str(exc))
    except OSError as exc:  # the store's directory cannot be created or opened
        fail(f"cannot open the store {str(db or 'default')[:200]!r}: {exc.strerror or type(exc).__name__}")


def progress() -> Progress:
    """The progress bar every long phase uses (written to stderr)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a bar is for a person watching; a pipe gets the result lines only
    )


def _read_source(source: str) -> str:
    """The text of a file (or stdin for '-'), or a ValidationError naming what is wrong with it."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except IsADirectoryError:
        raise ValidationError(f"{source[:200]}: is a directory, not a file") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {source[:200]!r}: {exc.strerror or type(exc).__name__}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{source[:200]}: not UTF-8 text (byte {exc.start})") from None


def _read_messages(source: str, limits: Limits) -> list[Message]:
    """Every message of a JSON list or JSONL file, all checked before any is added."""
    text = _read_source(source).strip()
    if not text:
        raise ValidationError(f"{source}: no messages")
    try:
        data = json.loads(text)
        rows = data if isinstance(data, list) else [data]
    except RecursionError:
        raise ValidationError(f"{source}: JSON nests too deeply") from None
    except json.JSONDecodeError:
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValidationError(f"{source}: line {n} is not JSON: {exc.msg}") from None
                except RecursionError:
                    raise ValidationError(f"{source}: line {n} nests too deeply") from None
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, str | dict):
            raise ValidationError(f"{source}: message {n} must be an object or a string")
    try:
        return check_messages(rows, replace(limits, batch=max(len(rows), 1)))
    except ValidationError as exc:
        raise ValidationError(f"{source}: {exc}") from None


@app.command()
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
    with open_memory(db, embedder) as memory:
        try:
            if text is not None:
                messages = check_messages([{"role": role, "content": text, "name": name}], memory.limits)
            else:
                messages = _read_messages(str(file), memory.limits)
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


def _hits_table(hits: list[Hit], explain: bool) -> Table:
    table = Table(show_lines=explain)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("memory")
    table.add_column("why")
    table.add_column("id", overflow="fold", max_width=12)
    for rank, hit in enumerate(hits, start=1):
        who = f"{show(hit.memory.speaker)}: " if hit.memory.speaker else ""
        when = hit.memory.timestamp.date().isoformat()
        parts = []
        for dim, b in sorted(hit.breakdown.items(), key=lambda kv: -kv[1].contribution):
            if explain:
                parts.append(f"{dim} raw={b.raw:.3f} norm={b.normalized:.2f} x{b.weight:g} = {b.contribution:.3f}")
                if dim in hit.triggers:
                    parts.append(f"  [dim]{show(hit.triggers[dim])}[/]")
            else:
                parts.append(f"{dim} {b.contribution:.2f}")
        if explain and hit.related:
            forms = ", ".join(f"{m.kind.value} {m.id}" for m in hit.related)
            parts.append(f"[dim]also matched as {show(forms)}: the same statement, folded into this hit[/]")
        table.add_row(
            str(rank),
            f"{hit.score:.3f}",
            f"[dim]{when}[/] {who}{show(hit.memory.text)}",
            "\n".join(parts),
            show(hit.memory.id),
        )
    return table


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: UserOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many results.")] = 10,
    preset_name: Annotated[
        str | None, typer.Option("--preset", help=f"Retrieval preset: {', '.join(PRESETS)}.")
    ] = None,
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
        except MemlaneError as exc:
            fail(str(exc))
    if as_json:
        dump([h.model_dump(mode="json") for h in hits])
    elif not hits:
        out.print("no memories found")
    else:
        out.print(_hits_table(hits, explain))


@app.command()
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
        out.print(_hits_table(answer.hits, explain))


@app.command()
def observe(
    source: Annotated[str, typer.Argument(help="JSONL file of observations ('-' for stdin).")],
    user: UserOpt,
    session: Annotated[str | None, typer.Option("--session", help="Session id (default: each one's stream).")] = None,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store grounded observations: captions with [label:Type] tags, timestamps and media references."""
    from memlane.observe import parse_observations

    try:
        batch = parse_observations(_read_source(source))
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


@app.command()
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


@app.command(name="list")
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


@app.command()
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


@app.command()
def jobs(
    user: UserOpt,
    state: Annotated[str | None, typer.Option("--state", help="queued, running, done or failed.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Run queued jobs to completion first.")] = False,
    retry: Annotated[
        bool, typer.Option("--retry", help="Queue the user's failed jobs again (implies --wait).")
    ] = False,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Background extraction jobs of a user: state, attempts, last error."""
    with open_memory(db, embedder) as memory:
        try:
            if retry:
                out.print(f"queued {memory.retry_jobs(user_id=user)} failed job(s) again")
            if wait or retry:
                memory.flush()
            found = memory.jobs(user_id=user, state=state, limit=1000)
        except MemlaneError as exc:
            fail(str(exc))
        if as_json:
            dump([j.model_dump(mode="json") for j in found])
            return
        table = Table("id", "state", "attempts", "messages", "updated", "error")
        for j in found:
            table.add_row(
                j.id,
                j.state.value,
                str(j.attempts),
                str(len(j.payload.get("message_ids", []))),
                j.updated_at.isoformat(timespec="seconds"),
                show((j.error or "")[:60]),
            )
        out.print(table)


@app.command()
def archive(
    user: UserOpt,
    restore: Annotated[str | None, typer.Option("--restore", help="Bring this archived memory back.")] = None,
    limit: Annotated[int, typer.Option("--limit")] = 100,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Memories evicted beyond capacity; --restore ID brings one back."""
    with open_memory(db, embedder) as memory:
        try:
            if restore is not None:
                item = memory.restore(restore, user_id=user)
                out.print(f"restored {show(item.id)}  {show(item.text[:80])}", highlight=False)
                return
            found = memory.archive(user_id=user, limit=limit)
        except MemlaneError as exc:
            fail(str(exc))
        if as_json:
            dump([a.model_dump(mode="json") for a in found])
            return
        for a in found:
            out.print(
                f"{show(a.memory.id)}  {a.archived_at.isoformat(timespec='seconds')}  \\[{a.memory.kind.value}] "
                f"{show(a.memory.text[:80])}",
                highlight=False,
            )


@app.command()
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


@app.command()
def export(
    dest: Annotated[str, typer.Argument(help="Output JSONL file (written whole or not at all), or '-' for stdout.")],
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user.")] = None,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Export memories as JSONL."""
    with open_memory(db, embedder) as memory:
        try:
            n = memory.export(sys.stdout if dest == "-" else Path(dest), user_id=user)
        except MemlaneError as exc:
            fail(str(exc))
    err.print(f"exported {n} memories")


@app.command(name="import")
def import_(
    source: Annotated[str, typer.Argument(help="JSONL file written by export, or '-' for stdin.")],
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="The user to import into (required unless --keep-user-ids).")
    ] = None,
    keep_user_ids: Annotated[
        bool,
        typer.Option("--keep-user-ids", help="Keep each memory's user id from the file (restore a whole store)."),
    ] = False,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Import a JSONL export into one user (all or nothing; ids the user already has are skipped)."""
    if (user is None) != keep_user_ids:
        fail("give either --user USER or --keep-user-ids")
    with open_memory(db, embedder) as memory:
        try:
            src = sys.stdin.buffer if source == "-" else Path(source)
            n = memory.import_(src, user_id=user, keep_user_ids=keep_user_ids)  # type: ignore[arg-type]
        except MemlaneError as exc:
            fail(str(exc))
    out.print(f"imported {n} memories")


@app.command()
def stats(
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user.")] = None,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Counts, embedder and size of the store."""
    with open_memory(db, embedder) as memory:
        data = memory.stats(user_id=user).model_dump(mode="json")
    if as_json:
        dump(data)
    else:
        for key, value in data.items():
            out.print(f"{key:>11}: {show(str(value))}", highlight=False)


@app.command()
def compact(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Rewrite the store's files so that nothing deleted remains on disk (SQLite VACUUM; PostgreSQL VACUUM FULL of
    memlane's tables, which locks each one while it is rewritten).
    """
    with open_memory(db, None) as memory:
        done = memory.compact()
    if as_json:
        dump(done.model_dump(mode="json"))
        return
    out.print(
        f"compacted {show(done.path)}: {done.size_before:,} -> {done.size_after:,} bytes "
        f"({', '.join(done.rewritten) or 'nothing to rewrite'})",
        highlight=False,
    )
    for note in done.notes:
        out.print(f"  note: {show(note)}", highlight=False)


@app.command()
def reindex(db: DbOpt = None, embedder: EmbedderOpt = None) -> None:
    """Re-embed every memory with the configured embedder."""
    with open_memory(db, embedder) as memory:
        total = memory.stats().memories
        with progress() as bar:
            task = bar.add_task("re-embedding", total=total)
            n = memory.reindex(on_progress=lambda k: bar.advance(task, k))
    out.print(f"re-embedded {n} memories with {memory.embedder.identity}")


@app.command()
def demo(
    embedder: EmbedderOpt = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show raw and weighted scores.")] = False,
) -> None:
    """Ingest a short multi-session conversation and show ranked, explained results."""
    from memlane.cli.demo import DEMO_QUERIES, DEMO_SESSIONS

    with open_memory(Path(":memory:"), embedder) as memory:
        for n, (when, turns) in enumerate(DEMO_SESSIONS, start=1):
            msgs = [
                Message(role="user" if who != "assistant" else "assistant", name=who, content=t) for who, t in turns
            ]
            memory.add(msgs, user_id="maya", session_id=f"session-{n}", timestamp=when)
        stats_ = memory.stats()
        out.print(
            f"[bold]memlane demo[/]: {stats_.by_kind.get('message', 0)} turns in {len(DEMO_SESSIONS)} sessions, "
            f"{stats_.memories - stats_.by_kind.get('message', 0)} memories extracted from them, "
            f"embedder {stats_.embedder}\n"
        )
        for query in DEMO_QUERIES:
            out.print(f"[bold cyan]? {query}[/]")
            out.print(_hits_table(memory.search(query, user_id="maya", top_k=3), explain))


@app.command()
def tune(
    name: Annotated[str, typer.Option("--name", help="Name of the preset to write.")],
    base: Annotated[str, typer.Option("--base", help="Preset whose dimensions and weights to start from.")] = "multi",
    locomo: Annotated[
        Path | None,
        typer.Option("--locomo", help="Learn from LoCoMo questions (a temporary store) instead of recorded feedback."),
    ] = None,
    split: Annotated[str, typer.Option("--split", help="LoCoMo conversations to learn from: tune or all.")] = "tune",
    k: Annotated[int, typer.Option("--k", help="Optimise recall@k.")] = 10,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Learn fusion weights from labelled queries and save them as a named preset (use it with --preset NAME)."""
    from memlane.retrieval.tuning import LabelledQuery

    if locomo is None:
        with open_memory(db, embedder) as memory:
            try:
                result = memory.tune(name=name, base=base, k=k)
            except MemlaneError as exc:
                fail(str(exc))
    else:
        import tempfile

        from memlane.bench.locomo import ingest_conversation
        from memlane.bench.locomo_data import load_locomo, select_split

        if split == "holdout":
            fail("learning from the holdout conversations would leave nothing unseen to report on")
        try:
            convs = select_split(load_locomo(locomo).conversations, split)
        except MemlaneError as exc:
            fail(str(exc))
        with (
            tempfile.TemporaryDirectory(prefix="memlane-tune-") as tmp,
            open_memory(Path(tmp) / "t.db", embedder) as memory,
        ):
            queries: list[LabelledQuery] = []
            with progress() as bar:
                task = bar.add_task("ingesting conversations", total=len(convs))
                for conv in convs:
                    ingest_conversation(memory, conv)
                    ids = {
                        str(it.metadata.get("dia_id")): it.id for it in memory.list(user_id=conv.conv_id, limit=100_000)
                    }
                    queries += [
                        LabelledQuery(
                            q.question, conv.conv_id, frozenset(ids[e] for e in q.evidence), group=conv.conv_id
                        )
                        for q in conv.questions
                        if q.category in (1, 2, 3, 4) and q.evidence
                    ]
                    bar.advance(task)
            try:
                result = memory.tune(queries, name=name, base=base, k=k)
            except MemlaneError as exc:
                fail(str(exc))
    table = Table(title=f"preset {show(repr(name))} learned from {show(repr(base))}")
    table.add_column("dimension")
    table.add_column("start", justify="right")
    table.add_column("learned", justify="right")
    for dim, weight in result.weights.items():
        table.add_row(dim, f"{result.start.get(dim, 0.0):.2f}", f"{weight:.2f}")
    out.print(table)
    out.print(
        f"recall@{k}: fitted on {result.train_queries} queries {result.train_before:.3f} -> {result.train_after:.3f}; "
        f"held out {result.test_queries} queries {result.test_before:.3f} -> {result.test_after:.3f} "
        f"(gain {result.test_gain:+.3f})"
    )


def main() -> None:
    """Entry point of the ``memlane`` script."""
    app()
