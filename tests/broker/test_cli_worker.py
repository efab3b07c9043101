"""``memlane worker`` and ``memlane add --async`` at the command line, with and without a reachable broker."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.cli import app

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash", "MEMLANE_DB": str(tmp_path / "m.db")}


def test_worker_refuses_bad_options(env: dict[str, str]) -> None:
    for args, message in (
        (["worker", "--celery"], "--celery needs a broker URL"),
        (["worker", "--pool", "gevent"], "unknown pool"),
        (["worker", "--concurrency", "0"], "--concurrency must be at least 1"),
    ):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 2, result.output
        assert message in result.stderr


def test_async_add_with_the_broker_down_says_so_and_the_job_runs_embedded(env: dict[str, str]) -> None:
    pytest.importorskip("celery")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = {**env, "MEMLANE_BROKER_URL": f"redis://127.0.0.1:{port}/0"}
    added = runner.invoke(app, ["add", "--user", "ana", "--async", "I live in Porto"], env=down)
    assert added.exit_code == 0, added.output
    assert "broker unreachable" in added.stderr and "embedded worker" in added.stderr
    jobs = runner.invoke(app, ["jobs", "--user", "ana", "--wait", "--json"], env=env)
    assert jobs.exit_code == 0, jobs.output
    assert [j["state"] for j in json.loads(jobs.stdout)] == ["done"]
