"""The command line refuses bad input with one stderr line and exit code 2, and never prints stored escapes raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.cli import app

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash", "MEMLANE_DB": str(tmp_path / "m.db")}


def refused(env: dict[str, str], *args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), env=env, input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def ok(env: dict[str, str], *args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), env=env, input=input)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_bad_files_and_paths_are_one_line_errors(env, tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    binary = tmp_path / "binary.dat"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80")
    assert "No such file" in refused(env, "add", "--user", "u", "--file", str(tmp_path / "missing.json"))
    assert "directory" in refused(env, "add", "--user", "u", "--file", str(tmp_path / "adir"))
    assert "not UTF-8" in refused(env, "add", "--user", "u", "--file", str(binary))
    assert "not valid UTF-8" in refused(env, "import", str(binary), "--user", "u")
    assert "cannot open the store" in refused(env, "stats", "--db", "/proc/nope/x.db")
    assert "cannot write export" in refused(env, "export", "/proc/nope/x.jsonl")


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", "1e20"])
def test_timestamps_off_the_calendar_are_one_line_errors(env, stamp: str) -> None:
    assert "timestamp" in refused(env, "add", "--user", "u", "hello", "--timestamp", stamp)


@pytest.mark.parametrize(
    "args",
    [
        ["search"],
        ["nosuchcommand"],
        ["list", "--user", "u", "--limit", "abc"],
        ["list", "--user", "u", "--limit", "100000000000000000000000"],
        ["add", "--user", "u", "hello", "--bogus"],
        ["add", "--user", "u", "hello", "--name", "n" * 1_000],
        ["import", "x.jsonl"],
    ],
)
def test_usage_errors_are_one_line(env, args: list[str]) -> None:
    refused(env, *args)


def test_a_bad_message_late_in_a_file_adds_nothing(env, tmp_path: Path) -> None:
    rows = [{"content": f"turn {i}"} for i in range(300)] + [{"content": "x", "name": "n" * 1_000}]
    (tmp_path / "msgs.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert "message 300 name" in refused(env, "add", "--user", "u", "--file", str(tmp_path / "msgs.jsonl"))
    assert json.loads(ok(env, "list", "--user", "u", "--json")) == []


def test_stored_escapes_are_shown_escaped(env) -> None:
    evil = "evil \x1b[2J\x1b[31mRED\x9b [bold]markup[/]"
    added = ok(env, "add", "--user", "u", evil, "--no-infer")
    listed = ok(env, "list", "--user", "u")
    found = ok(env, "search", "evil", "--user", "u")
    as_json = ok(env, "list", "--user", "u", "--json")
    for shown in (added, listed, found, as_json):
        assert "\x1b" not in shown and "\x9b" not in shown
    assert "[bold]markup" in added  # markup in stored text is shown, not interpreted
    assert json.loads(as_json)[0]["text"] == evil


def test_import_takes_the_user_from_the_command_line(env, tmp_path: Path) -> None:
    ok(env, "add", "--user", "ana", "remember the milk", "--no-infer")
    dump = tmp_path / "dump.jsonl"
    ok(env, "export", str(dump))
    other = {**env, "MEMLANE_DB": str(tmp_path / "other.db")}
    assert "--user" in refused(other, "import", str(dump))
    assert "imported 1" in ok(other, "import", str(dump), "--user", "carol")
    assert json.loads(ok(other, "list", "--user", "ana", "--json")) == []
    assert [m["text"] for m in json.loads(ok(other, "list", "--user", "carol", "--json"))] == ["remember the milk"]
    third = {**env, "MEMLANE_DB": str(tmp_path / "third.db")}
    assert "imported 1" in ok(third, "import", str(dump), "--keep-user-ids")
    assert len(json.loads(ok(third, "list", "--user", "ana", "--json"))) == 1
