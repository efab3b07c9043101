"""The retrieval side of the command line: explained search with triggers, presets, and tune from feedback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane import Config, Memory
from memlane.cli import app
from memlane.embedding.fake import HashEmbedder

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash", "MEMLANE_DB": str(tmp_path / "m.db")}


def run(env: dict[str, str], *args: str, ok: bool = True):  # type: ignore[no-untyped-def]
    result = runner.invoke(app, list(args), env=env)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def seed(env: dict[str, str]) -> None:
    for who, text in [("Ana", "I fixed ERR_CONN_RESET_42 in retry_policy.py"), ("Ben", "The job fails at night")]:
        run(env, "add", "--user", "u", "--name", who, "--session", "s1", text)


def test_explain_shows_what_in_the_query_engaged_each_dimension(env: dict[str, str]) -> None:
    seed(env)
    wide = {**env, "COLUMNS": "250"}  # a cell wrapped at 80 columns interleaves the next columns' text with it
    out = run(wide, "search", "what did Ben say about ERR_CONN_RESET_42?", "--user", "u", "--explain").stdout
    squashed = re.sub(r"[\s│┃|]", "", out)  # the table wraps long cells
    # in a scope of two turns no word is rare enough for the exact-match boost (nor, here, for BM25 at all)
    assert "exact-matchterms" not in squashed and "semanticsimilarity" in squashed
    assert "thequerynames'ben'" in squashed
    hits = json.loads(run(env, "search", "what did Ben say?", "--user", "u", "--json").stdout)
    assert hits[0]["triggers"]["entity"] == (
        "the query names 'ben'; 'ben' speaks here: own turns count most (weight 0.4)"
    )


def test_unknown_preset_is_a_clean_error(env: dict[str, str]) -> None:
    seed(env)
    result = run(env, "search", "job", "--user", "u", "--preset", "nope", ok=False)
    assert result.exit_code == 2 and "unknown retrieval preset 'nope'" in result.output


def test_tune_from_feedback_writes_a_preset_search_can_use(env: dict[str, str], tmp_path: Path) -> None:
    seed(env)
    config = Config(data_dir=Path(env["MEMLANE_HOME"]), embedder="hash")
    with Memory(env["MEMLANE_DB"], embedder=HashEmbedder(), config=config) as memory:
        for query, good in [("retry policy fix", "retry_policy"), ("night failures", "night")]:
            for hit in memory.search(query, user_id="u", top_k=2):
                memory.feedback(hit, useful=good in hit.memory.text)
    out = run(env, "tune", "--name", "mine").stdout
    assert "preset 'mine' learned from 'multi'" in out and "held out" in out
    saved = json.loads((Path(env["MEMLANE_HOME"]) / "presets.json").read_text(encoding="utf-8"))
    assert "mine" in saved
    assert json.loads(run(env, "search", "night", "--user", "u", "--preset", "mine", "--json").stdout)
    assert "no labelled queries" in run(env, "tune", "--name", "x", "--db", str(tmp_path / "empty.db"), ok=False).output


def test_explain_names_the_other_forms_of_a_statement_folded_into_a_hit(env: dict[str, str]) -> None:
    run(env, "add", "--user", "kim", "--name", "Kim", "I moved to Austin.")
    hits = json.loads(run(env, "search", "where does Kim live? Austin", "--user", "kim", "--json").stdout)
    assert len(hits) == 1 and len(hits[0]["related"]) == 1  # the turn and the fact distilled from it: one statement
    other = hits[0]["related"][0]
    assert {hits[0]["memory"]["kind"], other["kind"]} == {"message", "fact"}
    out = run(env, "search", "where does Kim live? Austin", "--user", "kim", "--explain").stdout
    squashed = re.sub(r"[\s│┃|]", "", out)
    assert f"alsomatchedas{other['kind']}{other['id'][:8]}" in squashed and "foldedintothishit" in squashed
