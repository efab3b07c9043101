"""``memlane bench scale``: ingest throughput, search latency, peak RSS and size on disk against corpus size.

Each point (embedder, corpus size, number of user scopes) runs in a fresh process, so that its peak RSS is its
own and no cache carries over. The corpus comes from ``memlane.bench.corpus`` (real conversation text, varied);
the queries are real LoCoMo and MemoryBank questions.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from pydantic import BaseModel, Field

from memlane.bench.clients import ClientsPoint, clients_point, clients_table
from memlane.bench.common import (
    Tracker,
    current_rss_mb,
    dir_size_bytes,
    forget_queries,
    machine,
    peak_rss_mb,
    run_isolated,
)
from memlane.bench.corpus import corpus, load_seeds, queries
from memlane.bench.metrics import percentile
from memlane.config import Config
from memlane.engine import Memory
from memlane.errors import ConfigError, ValidationError
from memlane.models import Message

DEFAULT_SIZES: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
DEFAULT_USERS: tuple[int, ...] = (1, 1_000)
DEFAULT_EMBEDDERS: tuple[str, ...] = ("minilm", "static")
#: Messages per ``Memory.add`` call (one transaction each) while ingesting.
ADD_BATCH = 500
#: Untimed searches before the timed ones (model and caches warm).
WARMUP_QUERIES = 5
T0 = datetime(2023, 1, 1, tzinfo=UTC)


class ScalePoint(BaseModel):
    """The measurements of one (system, embedder, size, users) point."""

    system: str = "memlane"
    embedder: str
    size: int
    users: int
    ingest_seconds: float
    ingest_items_per_s: float
    queries: int
    search_p50_ms: float
    search_p95_ms: float
    search_p99_ms: float
    first_search_ms: float = Field(
        0.0,
        description="The first search after the ingest (0: not measured): it builds or loads the scope's vector index "
        "and its read model (a scope of 20,000 memories or more: starts building it in the background and reads the "
        "tables meanwhile), so bulk ingest followed by a search costs ingest_seconds plus this",
    )
    graph_ready_s: float | None = Field(
        None,
        description="Seconds from the end of the first search until the background work it started had finished: "
        "the graph build of a scope past exact_below (then saved) and the read model of a scope of 20,000 memories "
        "or more (0: none; None: not measured); searches before then are exact and read the tables, and the timed "
        "searches start after it",
    )
    reopen_search_ms: float = Field(
        0.0,
        description="The first search after the store is closed and opened again at the end of the run, as a new "
        "process sees it (saved index files loaded; a scope of 20,000 memories or more answered from the tables while "
        "its read model builds in the background); 0: not measured (a store URL)",
    )
    chat_queries: int = Field(0, description="Searches timed in the chat workload (each right after one add)")
    chat_p50_ms: float = 0.0
    chat_p95_ms: float = 0.0
    chat_p99_ms: float = 0.0
    chat_add_p50_ms: float = Field(0.0, description="Latency of the one-message add before each chat search")
    preset: str = ""
    infer: bool = False
    peak_rss_mb: float
    baseline_rss_mb: float = Field(0.0, description="RSS before the system was opened (the corpus in memory)")
    disk_bytes: int
    identity: str = ""
    note: str = ""


class ScaleReport(BaseModel):
    """Every point of a scale run."""

    kind: Literal["scale"] = "scale"
    command: str = ""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    machine: str
    corpus: str
    points: list[ScalePoint]
    clients: list[ClientsPoint] = Field(default_factory=list, description="Concurrent-client points (--clients)")


def store_label(url: str) -> str:
    """The backends of a store URL, for a row's name: ``postgresql``, ``sqlite + qdrant+local`` (never the path,
    host or credentials).
    """
    scheme, _, rest = url.partition("://")
    options = dict(p.partition("=")[::2] for p in rest.partition("?")[2].split("&") if p)  # as the opener reads them
    vectors = unquote(options.get("vectors", ""))
    return f"{scheme} + {vectors.partition('://')[0]}" if vectors else scheme


def parse_max_sizes(values: Sequence[str] | None) -> dict[str, int]:
    """``["minilm=100000"]`` as ``{"minilm": 100000}``."""
    out: dict[str, int] = {}
    for value in values or ():
        name, sep, size = value.partition("=")
        if not sep or not size.strip().isdigit():
            raise ConfigError(f"--max-size takes NAME=N, got {value!r}")
        out[name.strip()] = int(size)
    return out


@dataclass(frozen=True)
class ScalePlan:
    """Which points a scale run measures."""

    sizes: tuple[int, ...]
    embedders: tuple[str, ...]
    users: tuple[int, ...]
    max_sizes: dict[str, int]
    queries: int
    preset: str | None = None
    store: str | None = None  # a store URL measured instead of a temporary SQLite file (it must start empty)
    filled: str | None = None  # the user of the store who already holds the corpus (an earlier ingest, a migrate)
    clients: int = 1  # above 1: each point also runs that many concurrent chat clients (memlane.bench.clients)

    @classmethod
    def build(
        cls,
        *,
        sizes: Sequence[int] | None = None,
        embedders: Sequence[str] | None = None,
        users: Sequence[int] | None = None,
        max_sizes: Sequence[str] | None = None,
        queries: int = 200,
        quick: bool = False,
        preset: str | None = None,
        store: str | None = None,
        filled: str | None = None,
        clients: int = 1,
    ) -> ScalePlan:
        """A plan from CLI options; ``quick`` shrinks the defaults to 1,000 memories, 1 and 100 users, 50 queries."""
        if quick:
            sizes = sizes or (1_000,)
            users = users or (1, 100)
            queries = min(queries, 50)
        plan = cls(
            sizes=tuple(sizes or DEFAULT_SIZES),
            embedders=tuple(embedders or DEFAULT_EMBEDDERS),
            users=tuple(users or DEFAULT_USERS),
            max_sizes=parse_max_sizes(max_sizes),
            queries=queries,
            preset=preset,
            store=store,
            filled=filled,
            clients=clients,
        )
        if filled is not None and (store is None or len(plan.points()) != 1 or plan.users != (1,) or clients > 1):
            raise ConfigError("--filled measures one size, one user and one embedder, in the --store it names")
        if min(plan.sizes) < 1 or min(plan.users) < 1 or plan.queries < 1 or plan.clients < 1:
            raise ConfigError("sizes, users, queries and clients must be positive")
        return plan

    def points(self) -> list[tuple[str, int, int]]:
        """``(embedder, size, users)`` of every point, smallest first; users never exceed the size."""
        return [
            (e, s, u)
            for e in self.embedders
            for s in sorted(self.sizes)
            if s <= self.max_sizes.get(e, s)
            for u in self.users
            if u <= s
        ]


def user_blocks(size: int, users: int) -> list[tuple[str, int, int]]:
    """``(user_id, start, stop)`` of each user's contiguous share of a corpus of ``size`` texts."""
    per, extra = divmod(size, users)
    out = []
    start = 0
    for u in range(users):
        stop = start + per + (1 if u < extra else 0)
        out.append((f"user-{u:04d}", start, stop))
        start = stop
    return out


def memlane_point(
    locomo: Path,
    memorybank: Path | None,
    embedder: str,
    size: int,
    users: int,
    n_queries: int,
    preset: str | None = None,
    store: str | None = None,
    filled: str | None = None,
    *,
    tracker: Tracker,
) -> ScalePoint:
    """Measure one point (runs inside a fresh process; see ``run_isolated``).

    Two workloads: search-only (every search over an unchanged store), then chat (each search right after a
    one-message ``add`` to the same user, as in a conversation, so that any per-write index or cache work that a
    search pays for shows up). With ``store`` (a URL; it must hold no memories) the point is measured there, and
    what it wrote is deleted afterwards. With ``filled`` (a user id) that user of the store already holds this
    point's corpus (ingested by an earlier run, or copied by ``memlane migrate``): ingest is not measured, and only
    the chat turns are deleted afterwards.
    """
    seeds = load_seeds(locomo, memorybank)
    texts = list(corpus(seeds, size))
    qs = queries(seeds, n_queries)
    blocks = user_blocks(size, users) if filled is None else [(filled, 0, size)]
    rng = random.Random(2)
    targets = [blocks[rng.randrange(len(blocks))][0] for _ in qs]
    config = Config.from_env()
    # The preset's own name ("multi", not "default"); an unknown name fails before the corpus is ingested.
    preset_name = config.preset_for(preset or config.preset).name
    chat_texts = [f"{texts[rng.randrange(len(texts))]} (said again, turn {i})" for i in range(len(qs))]
    baseline = current_rss_mb()
    with tempfile.TemporaryDirectory(prefix="memlane-scale-") as tmp:
        db = Path(tmp) / "scale.db"
        with Memory(store or db, embedder=embedder, config=config) as memory:
            held = memory.stats(user_id=filled).memories if store is not None else 0
            if filled is not None and held != size:
                raise ValidationError(f"user {filled!r} of the bench store holds {held:,} memories, not {size:,}")
            if filled is None and held:
                raise ValidationError(f"the bench store {memory.stats().path} must be empty; it holds memories")
            if store is not None and filled is None:
                # An emptied database is not a new one: on PostgreSQL the HNSW graph keeps the deleted rows' nodes
                # until a vacuum, and searches walk them (68.6 ms p50 at 10k instead of 10.8, docs/deploy.md).
                memory.compact()
            memory.embedder.embed(["warm up the model before timing"])
            memory.embedder.embed_query("warm up")
            identity = memory.embedder.identity
            tracker.phase(f"scale {embedder} {size:,} in {users:,} users: ingest", size)
            start = time.perf_counter()
            for user, lo, hi in blocks if filled is None else []:
                for b in range(lo, hi, ADD_BATCH):
                    chunk = range(b, min(b + ADD_BATCH, hi))
                    memory.add(
                        [Message(role="user", content=texts[k], timestamp=T0 + timedelta(minutes=k)) for k in chunk],
                        user_id=user,
                        session_id=f"s{b // ADD_BATCH}",
                    )
                    tracker.advance(len(chunk))
            ingest_s = time.perf_counter() - start if filled is None else 0.0
            tracker.phase(f"scale {embedder} {size:,} in {users:,} users: search", len(qs))
            t0 = time.perf_counter()  # the first search builds (or loads) the scope's vector index: timed apart
            memory.search(qs[0], user_id=targets[0], top_k=10, preset_name=preset_name)
            first_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()  # a scope past exact_below gets its graph on a background thread: wait for it
            memory.wait_for_index()
            ready_s = time.perf_counter() - t0
            for q, user in zip(qs[:WARMUP_QUERIES], targets, strict=False):
                memory.search(q, user_id=user, top_k=10, preset_name=preset_name)
            for user in dict.fromkeys(targets):  # every queried user's vectors loaded once, untimed
                memory.search("hello", user_id=user, top_k=1, preset_name=preset_name)
            forget_queries(memory.embedder)
            lat = []
            for q, user in zip(qs, targets, strict=True):
                t0 = time.perf_counter()
                memory.search(q, user_id=user, top_k=10, preset_name=preset_name)
                lat.append((time.perf_counter() - t0) * 1000)
                tracker.advance()
            tracker.phase(f"scale {embedder} {size:,} in {users:,} users: chat (add, then search)", len(qs))
            forget_queries(memory.embedder)
            chat, adds, said = [], [], []
            for i, (q, user) in enumerate(zip(qs, targets, strict=True)):
                t0 = time.perf_counter()
                turn = memory.add(
                    Message(role="user", content=chat_texts[i], timestamp=T0 + timedelta(minutes=size + i)),
                    user_id=user,
                    session_id="chat",
                )
                t1 = time.perf_counter()
                memory.search(q, user_id=user, top_k=10, preset_name=preset_name)
                chat.append((time.perf_counter() - t1) * 1000)
                adds.append((t1 - t0) * 1000)
                said += [(user, it.id) for it in turn.items]
                tracker.advance()
            disk = memory.stats().size_bytes if store is not None else 0
            if filled is not None:  # the corpus stays as it was found
                for user, memory_id in said:
                    memory.delete(memory_id, user_id=user)
            elif store is not None:
                for user, _, _ in blocks:
                    memory.delete_all(user_id=user)
        reopen_ms = 0.0
        if store is None:  # what a new process (a CLI call, a restarted server) waits for at its first search
            with Memory(db, embedder=embedder, config=config) as again:
                again.embedder.embed_query("warm up")
                t0 = time.perf_counter()
                again.search(qs[-1], user_id=targets[0], top_k=10, preset_name=preset_name)
                reopen_ms = (time.perf_counter() - t0) * 1000
                again.wait_for_index()  # untimed: the build it started ends before the files go
        disk = disk or dir_size_bytes(Path(tmp))
    return ScalePoint(
        system="memlane" if store is None else f"memlane ({store_label(store)})",
        embedder=embedder,
        identity=identity,
        size=size,
        users=users,
        ingest_seconds=ingest_s,
        ingest_items_per_s=size / ingest_s if ingest_s > 0 else 0.0,
        queries=len(lat),
        search_p50_ms=percentile(lat, 0.50),
        search_p95_ms=percentile(lat, 0.95),
        search_p99_ms=percentile(lat, 0.99),
        first_search_ms=first_ms,
        graph_ready_s=ready_s,
        reopen_search_ms=reopen_ms,
        chat_queries=len(chat),
        chat_p50_ms=percentile(chat, 0.50),
        chat_p95_ms=percentile(chat, 0.95),
        chat_p99_ms=percentile(chat, 0.99),
        chat_add_p50_ms=percentile(adds, 0.50),
        preset=preset_name,
        infer=config.infer,
        peak_rss_mb=peak_rss_mb(),
        baseline_rss_mb=baseline,
        disk_bytes=disk,
    )


CORPUS_NOTE = (
    "LoCoMo turns (with image captions) and MemoryBank (English) user messages and replies, distinct and shuffled; "
    "beyond those, each text is a seed plus the first sentence of another random seed, with people's names rotated "
    "through a pool of 30 per pass; every text is distinct. Queries: real LoCoMo and MemoryBank questions."
)


def run_scale(
    locomo: Path,
    memorybank: Path | None,
    plan: ScalePlan,
    *,
    tracker: Tracker,
    on_point: Callable[[ScaleReport], None] | None = None,
) -> ScaleReport:
    """Measure every point of ``plan``, each in its own process; ``on_point`` sees the report after each point."""
    report = ScaleReport(machine=machine(), corpus=CORPUS_NOTE, points=[])
    for e, s, u in plan.points():
        report.points.append(
            run_isolated(
                memlane_point,
                locomo,
                memorybank,
                e,
                s,
                u,
                plan.queries,
                plan.preset,
                plan.store,
                plan.filled,
                tracker=tracker,
            )
        )
        if plan.clients > 1:  # run from here: the clients are processes of their own (a child may not fork)
            report.clients.append(
                clients_point(
                    locomo, memorybank, e, s, plan.clients, plan.queries, plan.preset, plan.store, tracker=tracker
                )
            )
        if on_point is not None:
            on_point(report)
    return report


def points_table(points: Sequence[ScalePoint]) -> list[str]:
    """Markdown rows of scale points."""
    lines = [
        "| system | embedder | preset | memories | users | ingest items/s | first search s | graph ready s | "
        "reopened first search s | search p50 ms | p95 ms | p99 ms | chat p50 ms | chat p95 ms | chat add p50 ms | "
        "peak RSS MiB | on disk MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        chat = f"{p.chat_p50_ms:.2f} | {p.chat_p95_ms:.2f} | {p.chat_add_p50_ms:.2f}" if p.chat_queries else "– | – | –"
        first = f"{p.first_search_ms / 1000:,.2f}" if p.first_search_ms else "–"
        ready = "–" if p.graph_ready_s is None else f"{p.graph_ready_s:,.1f}"
        again = f"{p.reopen_search_ms / 1000:,.2f}" if p.reopen_search_ms else "–"
        ingest = f"{p.ingest_items_per_s:,.0f}" if p.ingest_seconds else "– (filled)"
        lines.append(
            f"| {p.system} | {p.embedder} | {p.preset or '–'} | {p.size:,} | {p.users:,} | "
            f"{ingest} | {first} | {ready} | {again} | {p.search_p50_ms:.2f} | {p.search_p95_ms:.2f} | "
            f"{p.search_p99_ms:.2f} | {chat} | {p.peak_rss_mb:,.0f} | {p.disk_bytes / 2**20:,.1f} |"
        )
    return lines


def render_scale(report: ScaleReport) -> str:
    """A Markdown summary of a scale run."""
    lines = [f"scale run on {report.machine}", "", *points_table(report.points)]
    if report.clients:
        lines += ["", "Concurrent clients (each its own process and user: add one message, then search):", ""]
        lines += clients_table(report.clients)
    return "\n".join(lines)
