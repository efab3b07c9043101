"""Load test of the REST server on loopback: N concurrent clients for a fixed time, mixed add and search, with
throughput, latency percentiles per operation and every non-2xx counted.

Written on httpx's async client rather than locust: one process drives 50 connections easily on loopback, the
numbers come back as a typed result the report can keep, and no gevent stack joins the dev environment.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memlane.errors import ConfigError, MissingDependencyError

WORDS = [
    "beagle",
    "Denver",
    "guitar",
    "sister",
    "launch",
    "Friday",
    "tea",
    "marathon",
    "Lisbon",
    "novel",
    "piano",
    "garden",
    "promotion",
    "dentist",
    "birthday",
    "camping",
    "recipe",
    "python",
    "deadline",
    "concert",
]


@dataclass
class OpStats:
    """Latencies (seconds) and status counts of one kind of request."""

    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")


@dataclass(frozen=True)
class LoadResult:
    """What a load run measured."""

    clients: int
    seconds: float
    requests: int
    errors: int
    server_errors: int
    by_op: dict[str, dict[str, float]]
    load_average: tuple[float, float, float]

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def spawned_server(embedder: str | None, home: Path | None = None) -> Iterator[tuple[str, str]]:
    """Start ``memlane serve`` on a fresh data dir (``home``, or a temporary one) and a free loopback port, with no
    rate limit; yields ``(url, admin key)``, the key read from the first start's output.
    """
    if home is None:
        with tempfile.TemporaryDirectory(prefix="memlane-load-") as tmp, spawned_server(embedder, Path(tmp)) as pair:
            yield pair
        return
    port = _free_port()
    cmd = [sys.executable, "-c", "from memlane.cli import main; main()", "serve", "--port", str(port)]
    cmd += ["--data-dir", str(home), "--db", str(home / "memlane.db"), "--rate", "0"]
    if embedder:
        cmd += ["--embedder", embedder]
    env = {**os.environ, "MEMLANE_HOME": str(home)}
    # The server's output goes to a file, never to a pipe nobody drains: a full pipe would block the server's
    # writes and hang every request in flight.
    printed = home / "serve.out"
    with printed.open("w", encoding="utf-8") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, proc)
        keys = re.findall(r"ml_[0-9a-f]{12}_[0-9a-f]{64}", printed.read_text(encoding="utf-8"))
        if not keys:
            raise ConfigError(f"the spawned server did not print an admin key (see {printed})")
        yield url, keys[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_ready(url: str, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ConfigError(f"the spawned server exited with code {proc.returncode}")
        try:
            if httpx.get(f"{url}/ready", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise ConfigError(f"the spawned server was not ready within {timeout:.0f} s")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))


async def _client(
    n: int,
    url: str,
    key: str,
    deadline: float,
    add_share: float,
    users: int,
    stats: dict[str, OpStats],
    async_adds: bool = False,
) -> None:
    import httpx

    rng = random.Random(n)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60.0) as client:
        while time.monotonic() < deadline:
            user = f"user-{rng.randrange(users)}"
            if rng.random() < add_share:
                op, path = "add", "/v1/memories"
                body: dict[str, object] = {"user_id": user, "messages": [_sentence(rng)], "async": async_adds}
            else:
                op, path = "search", "/v1/search"
                body = {"user_id": user, "query": _sentence(rng), "top_k": 10}
            start = time.perf_counter()
            try:
                status = (await client.post(path, json=body)).status_code
            except httpx.HTTPError:
                status = 0
            s = stats[op]
            s.latencies.append(time.perf_counter() - start)
            s.statuses[status] = s.statuses.get(status, 0) + 1


async def _run(
    url: str, key: str, clients: int, seconds: float, add_share: float, users: int, async_adds: bool
) -> dict[str, OpStats]:
    stats = {"add": OpStats(), "search": OpStats()}
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(_client(i, url, key, deadline, add_share, users, stats, async_adds) for i in range(clients)))
    return stats


def run_load(
    url: str,
    key: str,
    *,
    clients: int = 50,
    seconds: float = 60.0,
    add_share: float = 0.3,
    users: int = 20,
    async_adds: bool = False,
) -> LoadResult:
    """Drive the server at ``url`` with ``clients`` concurrent clients for ``seconds``; ``async_adds`` queues each
    add's extraction as a job (202) instead of running it in the request (with a broker, on Celery workers).
    """
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("the load benchmark", "dev") from exc
    start = time.monotonic()
    stats = asyncio.run(_run(url, key, clients, seconds, add_share, users, async_adds))
    elapsed = time.monotonic() - start
    by_op: dict[str, dict[str, float]] = {}
    for op, s in stats.items():
        by_op[op] = {
            "requests": float(len(s.latencies)),
            "p50_ms": s.percentile(50) * 1000,
            "p95_ms": s.percentile(95) * 1000,
            "p99_ms": s.percentile(99) * 1000,
            **{f"status_{code}": float(count) for code, count in sorted(s.statuses.items())},
        }
    every = [(code, count) for s in stats.values() for code, count in s.statuses.items()]
    return LoadResult(
        clients=clients,
        seconds=elapsed,
        requests=sum(count for _, count in every),
        errors=sum(count for code, count in every if not 200 <= code < 300),
        server_errors=sum(count for code, count in every if code >= 500 or code == 0),
        by_op=by_op,
        load_average=os.getloadavg(),
    )
