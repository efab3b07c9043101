"""``memlane migrate`` end to end: a copy into SQLite + Qdrant's local mode, its report, and a refused target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.cli import app
from tests.cli.test_cli import env, run  # noqa: F401  (env is a fixture)

runner = CliRunner()


def test_migrate_copies_and_verifies(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    pytest.importorskip("qdrant_client", reason="memlane[qdrant] is not installed")
    for text in ("I adopted a beagle called Biscuit", "My sister lives in Porto", "I play the cello on Sundays"):
        run(env, "add", "--user", "ana", text)
    run(env, "add", "--user", "bo", "Bo drinks green tea")
    target = f"sqlite:///{tmp_path / 'new.db'}?vectors=qdrant+local"
    out = run(env, "migrate", "--from", env["MEMLANE_DB"], "--to", target, "--batch", "2", "--json").stdout
    report = json.loads(out)
    held = json.loads(run(env, "stats", "--json").stdout)["memories"]  # the messages and what was extracted
    checks = {c["name"]: (c["source"], c["target"]) for c in report["checks"]}
    assert report["ok"] and held >= 4 and report["copied"]["memories"] == held
    assert checks["memories"] == (str(held), str(held))
    assert Path(report["checkpoint"]).is_relative_to(Path(env["MEMLANE_HOME"]) / "migrations")
    again = run(env, "migrate", "--from", env["MEMLANE_DB"], "--to", target).stdout  # done: verifies again
    assert "verification" in again and "DIFFERENT" not in again

    other = tmp_path / "other.db"
    run(env, "add", "--user", "cy", "already here", "--db", str(other))
    refused = runner.invoke(app, ["migrate", "--from", env["MEMLANE_DB"], "--to", str(other)], env=env)
    assert refused.exit_code != 0 and "already holds 1 memories" in refused.output


def test_migrate_says_the_pii_key_must_travel(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    redacting = {**env, "MEMLANE_REDACT_PII": "email"}
    run(redacting, "add", "--user", "ana", "Write to me at ana.cello@example.com on Sundays")
    out = run(env, "migrate", "--from", env["MEMLANE_DB"], "--to", str(tmp_path / "new.db")).stdout
    assert "originals" in out and "DIFFERENT" not in out
    assert "pii.key" in " ".join(out.split()) and "is not part of a store" in " ".join(out.split())
