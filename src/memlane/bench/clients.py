"""``memlane bench scale --clients N``: several client processes running the chat workload against one store at once.

Each client is its own process (its own connection, model and caches, as separate app servers would be) with its
own user: it adds one message, then searches, over and over. The store is filled first (the point's corpus spread
over the clients' users); then every client starts on one barrier and the aggregate throughput (chat turns a
second, all clients together) and the latency of each operation are measured. This is where a server database
should beat one SQLite file, whose writers take turns.
"""

from __future__ import annotations

import multiprocessing
import queue
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memlane.bench.common import Tracker
from memlane.bench.corpus import corpus, load_seeds, queries
from memlane.bench.metrics import percentile
from memlane.config import Config
from memlane.engine import Memory
from memlane.errors import MemlaneError, ValidationError
from memlane.models import Message

#: Messages per ``Memory.add`` while filling the store.
FILL_BATCH = 500
_T0 = datetime(2023, 1, 1, tzinfo=UTC)
#: Seconds a client may take to open its store and warm up before the start.
START_TIMEOUT = 300


class ClientsPoint(BaseModel):
    """The chat workload of several concurrent clients against one store."""

    system: str
    embedder: str
    size: int = Field(description="Memories in the store before the clients start (spread over their users)")
    clients: int
    turns_per_client: int
    seconds: float = Field(description="Wall time from the common start until the last client finished")
    turns_per_s: float = Field(description="Chat turns (one add, then one search) a second, all clients together")
    add_p50_ms: float
    add_p95_ms: float
    search_p50_ms: float
    search_p95_ms: float
    errors: int = 0
    preset: str = ""
    note: str = ""


@dataclass(frozen=True)
class _Job:
    target: str
    embedder: str
    user: str
    texts: Sequence[str]
    queries: Sequence[str]
    preset: str


def _client(job: _Job, start: Any, out: Any) -> None:
    """One client process: warm up, wait for the others, then add-and-search; report latencies and times."""
    try:
        with Memory(job.target, embedder=job.embedder, config=Config.from_env()) as memory:
            memory.search("warm up", user_id=job.user, top_k=10, preset_name=job.preset)
            start.wait(timeout=START_TIMEOUT)
            adds, searches, errors = [], [], 0
            began = time.time()
            for i, (text, q) in enumerate(zip(job.texts, job.queries, strict=True)):
                try:
                    t0 = time.perf_counter()
                    memory.add(
                        Message(role="user", content=f"{text} (turn {i})"), user_id=job.user, session_id="clients"
                    )
                    t1 = time.perf_counter()
                    memory.search(q, user_id=job.user, top_k=10, preset_name=job.preset)
                    t2 = time.perf_counter()
                except MemlaneError:
                    errors += 1
                    continue
                adds.append((t1 - t0) * 1000)
                searches.append((t2 - t1) * 1000)
            out.put(("done", (adds, searches, errors, began, time.time())))
    except BaseException as exc:  # reported to the parent, which fails the point
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def _run(
    target: str,
    embedder: str,
    users: Sequence[str],
    texts: Sequence[str],
    qs: Sequence[str],
    size: int,
    turns: int,
    preset_name: str,
    config: Config,
    tracker: Tracker,
) -> list[tuple[list[float], list[float], int, float, float]]:
    """Fill the store, then run the clients at once; each client's (adds, searches, errors, start, end)."""
    clients = len(users)
    with Memory(target, embedder=embedder, config=config) as memory:
        for b in range(0, size, FILL_BATCH):
            chunk = range(b, min(b + FILL_BATCH, size))
            memory.add(
                [Message(role="user", content=texts[k], timestamp=_T0 + timedelta(minutes=k)) for k in chunk],
                user_id=users[(b // FILL_BATCH) % clients],
                session_id=f"s{b // FILL_BATCH}",
            )
            tracker.advance(len(chunk))
    tracker.phase(f"clients {embedder} {size:,}: {clients} clients x {turns} chat turns", clients)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(clients)
    out = ctx.Queue()
    procs = []
    for c, user in enumerate(users):
        mine = texts[size + c * turns : size + (c + 1) * turns]
        job = _Job(target, embedder, user, mine, qs, preset_name)
        proc = ctx.Process(target=_client, args=(job, start, out), daemon=True)
        proc.start()
        procs.append(proc)
    results: list[tuple[list[float], list[float], int, float, float]] = []
    try:
        while len(results) < clients:
            try:
                kind, payload = out.get(timeout=5.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    raise MemlaneError("benchmark clients died before reporting") from None
                continue
            if kind == "error":
                raise MemlaneError(f"a benchmark client failed: {payload}")
            results.append(payload)
            tracker.advance()
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return results


def clients_point(
    locomo: Path,
    memorybank: Path | None,
    embedder: str,
    size: int,
    clients: int,
    turns: int,
    preset: str | None = None,
    store: str | None = None,
    *,
    tracker: Tracker,
) -> ClientsPoint:
    """Fill a store with ``size`` memories over ``clients`` users, then run ``clients`` processes of ``turns`` chat
    turns each at once. With ``store`` (a URL; it must hold no memories) the point is measured there and what it
    wrote is deleted afterwards; else in a temporary SQLite file.
    """
    seeds = load_seeds(locomo, memorybank)
    texts = list(corpus(seeds, size + clients * turns))
    qs = queries(seeds, turns)
    config = Config.from_env()
    preset_name = config.preset_for(preset or config.preset).name
    users = [f"client-{c:03d}" for c in range(clients)]
    with tempfile.TemporaryDirectory(prefix="memlane-clients-") as tmp:
        target = store or str(Path(tmp) / "clients.db")
        tracker.phase(f"clients {embedder} {size:,}: fill", size)
        with Memory(target, embedder=embedder, config=config) as memory:
            if store is not None and memory.stats().memories:
                raise ValidationError(f"the bench store {memory.stats().path} must be empty; it holds memories")
            if store is not None:
                memory.compact()  # an emptied database starts as a new one (see memlane.bench.scale)
        try:
            results = _run(target, embedder, users, texts, qs, size, turns, preset_name, config, tracker)
        finally:
            if store is not None:  # what the point wrote goes, whether it finished or not
                with Memory(target, embedder=embedder, config=config) as memory:
                    for user in users:
                        memory.delete_all(user_id=user)
    adds = [x for r in results for x in r[0]]
    searches = [x for r in results for x in r[1]]
    seconds = max(r[4] for r in results) - min(r[3] for r in results)
    return ClientsPoint(
        system="memlane (sqlite)" if store is None else f"memlane ({store.partition('://')[0]})",
        embedder=embedder,
        size=size,
        clients=clients,
        turns_per_client=turns,
        seconds=seconds,
        turns_per_s=len(searches) / seconds if seconds > 0 else 0.0,
        add_p50_ms=percentile(adds, 0.50),
        add_p95_ms=percentile(adds, 0.95),
        search_p50_ms=percentile(searches, 0.50),
        search_p95_ms=percentile(searches, 0.95),
        errors=sum(r[2] for r in results),
        preset=preset_name,
    )


def clients_table(points: Sequence[ClientsPoint]) -> list[str]:
    """Markdown rows of concurrent-client points."""
    lines = [
        "| system | embedder | preset | memories | clients | turns/s (all) | add p50 ms | add p95 ms | "
        "search p50 ms | search p95 ms | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p.system} | {p.embedder} | {p.preset or '–'} | {p.size:,} | {p.clients} | {p.turns_per_s:,.1f} | "
            f"{p.add_p50_ms:.2f} | {p.add_p95_ms:.2f} | {p.search_p50_ms:.2f} | {p.search_p95_ms:.2f} | {p.errors} |"
        )
    return lines
