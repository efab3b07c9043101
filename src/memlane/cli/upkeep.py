"""The upkeep commands: jobs, the archive, export and import, statistics, compaction, reindexing, tuning, and
the demo.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memlane.cli.common import hits_table, open_memory, progress
from memlane.cli.options import DbOpt, EmbedderOpt, JsonOpt, UserOpt
from memlane.cli.output import dump, err, fail, out, show
from memlane.errors import MemlaneError


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
        from rich.table import Table

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


def reindex(db: DbOpt = None, embedder: EmbedderOpt = None) -> None:
    """Re-embed every memory with the configured embedder."""
    with open_memory(db, embedder) as memory:
        total = memory.stats().memories
        with progress() as bar:
            task = bar.add_task("re-embedding", total=total)
            n = memory.reindex(on_progress=lambda k: bar.advance(task, k))
    out.print(f"re-embedded {n} memories with {memory.embedder.identity}")


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
    from rich.table import Table

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


def demo(
    embedder: EmbedderOpt = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show raw and weighted scores.")] = False,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Store the conversation in the store (--db, default the server's), not in memory."),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Ingest a short multi-session conversation and show ranked, explained results."""
    from memlane.cli.demo import DEMO_QUERIES, DEMO_SESSIONS
    from memlane.models import Message

    with open_memory(db if keep else Path(":memory:"), embedder) as memory:
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
            out.print(hits_table(memory.search(query, user_id="maya", top_k=3), explain))
