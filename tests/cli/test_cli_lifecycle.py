"""The lifecycle side of the command line: --infer/--no-infer, --async, jobs and the archive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import run


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash", "MEMLANE_DB": str(tmp_path / "m.db")}


def test_no_infer_stores_only_the_message(env: dict[str, str]) -> None:
    stored = json.loads(run(env, "add", "--user", "ana", "--no-infer", "I live in Porto", "--json").stdout)
    assert [m["kind"] for m in stored] == ["message"]
    again = run(env, "add", "--user", "ana", "--no-infer", "I live in Porto").stdout
    assert "stored 0 memories" in again and "1 already stored" in again


def test_async_add_queues_a_job_that_jobs_wait_runs(env: dict[str, str]) -> None:
    out = run(env, "add", "--user", "ana", "--async", "I live in Porto").stdout
    assert "job " in out
    jobs = json.loads(run(env, "jobs", "--user", "ana", "--wait", "--json").stdout)
    assert [j["state"] for j in jobs] == ["done"]
    assert "done" in run(env, "jobs", "--user", "ana").stdout
    listed = json.loads(run(env, "list", "--user", "ana", "--json").stdout)
    assert sorted(m["kind"] for m in listed) == ["fact", "message"]
    assert run(env, "jobs", "--user", "ana", "--state", "nope", ok=False).exit_code == 2


def test_archive_lists_and_restores(env: dict[str, str]) -> None:
    capped = {**env, "MEMLANE_CAPACITY": "1"}
    run(capped, "add", "--user", "ana", "I love sushi.")
    run(capped, "add", "--user", "ana", "I love ramen.")
    [gone] = json.loads(run(capped, "archive", "--user", "ana", "--json").stdout)
    assert "restored" in run(capped, "archive", "--user", "ana", "--restore", gone["memory"]["id"]).stdout
    assert json.loads(run(capped, "archive", "--user", "ana", "--json").stdout) == []
