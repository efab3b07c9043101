"""``memlane graph ENTITY`` and the graph dimension's explanation in ``memlane search --explain``."""

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


def run(env: dict[str, str], *args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == code, result.output
    return result.stdout if code == 0 else result.stderr


def test_graph_prints_an_entity_neighbourhood(env) -> None:
    run(env, "add", "--user", "u", "--name", "Melanie", "My sister Anna works at Acme Corp.")
    run(env, "add", "--user", "u", "--name", "Melanie", "Anna and Tom went to Rome last week.")
    text = run(env, "graph", "Anna", "--user", "u")
    assert text.startswith("Anna [person] (anna; ")
    assert "also known as: melanie sister" in text
    assert "anna --works_at--> acme corp" in text
    assert "Anna and Tom went to Rome last week." in text
    data = json.loads(run(env, "graph", "Melanie's sister", "--user", "u", "--json", "--limit", "1"))
    assert data["node"]["name"] == "anna" and len(data["memories"]) == 1
    assert {(r["predicate"], r["object"]) for r in data["relations"]} == {
        ("sister_of", "melanie"),
        ("works_at", "acme corp"),
    }
    assert "no entity 'Nobody'" in run(env, "graph", "Nobody", "--user", "u", code=2)
    assert "no entity" in run(env, "graph", "Anna", "--user", "someone-else", code=2)


def test_search_explains_the_graph_path(env) -> None:
    run(env, "add", "--user", "u", "--name", "Melanie", "--session", "s", "My kids are Ollie and Mia.")
    run(env, "add", "--user", "u", "--name", "Caroline", "--session", "s", "Yesterday Ollie built a Lego ship.")
    out = run(env, "search", "Melanie kids", "--user", "u", "--preset", "multi-graph", "--explain")
    assert "graph raw=" in out and "via 'ollie'" in out
