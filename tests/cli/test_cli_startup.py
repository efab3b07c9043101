"""The command line's shape: global options before or after the command, help text shown as written, and a start-up
that loads neither the models nor numpy (measured times are in docs/design.md, not asserted here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.cli import app
from memlane.cli.app import hoist_global_options
from memlane.cli.options import PRESET_NAMES

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash"}


def _ok(env: dict[str, str], *args: str) -> str:
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_db_before_or_after_the_command_opens_the_same_store(env: dict[str, str], tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    _ok(env, "--db", db, "add", "--user", "ana", "I adopted a beagle called Biscuit", "--no-infer")
    _ok(env, "add", "--db", db, "--user", "ana", "My sister lives in Porto", "--no-infer")
    _ok(env, f"--db={db}", "--embedder", "hash", "add", "--user", "ana", "I play chess", "--no-infer")
    before = json.loads(_ok(env, "--db", db, "list", "--user", "ana", "--json"))
    after = json.loads(_ok(env, "list", "--user", "ana", "--json", "--db", db))
    assert [m["text"] for m in before] == [m["text"] for m in after]
    assert [m["text"] for m in before] == [
        "I adopted a beagle called Biscuit",
        "My sister lives in Porto",
        "I play chess",
    ]
    assert not (tmp_path / "home" / "memlane.db").exists()  # nothing went to the default store


def test_the_option_after_the_command_wins_and_env_is_overridden(env: dict[str, str], tmp_path: Path) -> None:
    first, second = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    _ok({**env, "MEMLANE_DB": first}, "--db", second, "add", "--user", "u", "to b", "--no-infer")
    _ok(env, "--db", first, "add", "--db", second, "--user", "u", "also to b", "--no-infer")
    texts = [m["text"] for m in json.loads(_ok(env, "list", "--user", "u", "--json", "--db", second))]
    assert texts == ["to b", "also to b"]
    assert not Path(first).exists()


def test_a_global_option_without_a_command_that_takes_it_is_a_usage_error(env: dict[str, str]) -> None:
    result = runner.invoke(app, ["--db", "x.db", "bench", "report", "--help"], env=env)
    assert result.exit_code == 2 and "--db" in result.stderr


def test_hoisting_moves_only_leading_global_options_to_the_leaf_command() -> None:
    from typer.core import TyperGroup
    from typer.main import get_command

    group = get_command(app)
    assert isinstance(group, TyperGroup)
    assert hoist_global_options(group, ["--db", "x", "add", "t"]) == ["add", "--db", "x", "t"]
    assert hoist_global_options(group, ["--embedder=hash", "keys", "list"]) == ["keys", "list", "--embedder=hash"]
    assert hoist_global_options(group, ["add", "--db", "x"]) == ["add", "--db", "x"]
    assert hoist_global_options(group, ["--db", "x"]) == ["--db", "x"]
    assert hoist_global_options(group, ["--help"]) == ["--help"]


def test_observe_help_shows_the_tag_syntax() -> None:
    result = runner.invoke(app, ["observe", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "[label:Type]" in result.stdout


def test_preset_names_in_help_are_the_configured_presets() -> None:
    from memlane.config import PRESETS

    assert tuple(PRESETS) == PRESET_NAMES
    result = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "300"})
    assert all(name in result.stdout for name in PRESET_NAMES)


def test_importing_the_command_line_loads_no_model_numpy_or_engine() -> None:
    code = (
        "import sys, memlane.cli\n"
        "heavy = ('numpy', 'onnxruntime', 'tokenizers', 'pydantic', 'dateparser', 'memlane.engine', 'memlane.models')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
