"""``memlane bench extraction``: scores on a labelled sample file, and a clear error for a bad one."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from memlane.cli import app

runner = CliRunner()
SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "extraction"


def test_scores_a_sample_file() -> None:
    result = runner.invoke(app, ["bench", "extraction", "--samples", str(SAMPLES / "claims_tune.jsonl"), "--misses"])
    assert result.exit_code == 0, result.output
    assert "claims_tune.jsonl: " in result.output and "precision=" in result.output and "recall=" in result.output


def test_a_file_that_is_not_labelled_turns_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    result = runner.invoke(app, ["bench", "extraction", "--samples", str(bad)])
    assert result.exit_code == 2
    assert "bad.jsonl:1: not a labelled turn (missing 'timestamp')" in " ".join(result.output.split())
