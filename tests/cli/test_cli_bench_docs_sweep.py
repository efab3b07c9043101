"""``memlane bench docs --sweep``: the weights are read and checked before any store is opened, and the run prints the
weight windows (a tiny fixture of our own and the hash embedder: the harness, never a quality claim)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.cli import app
from tests.unit.test_bench_docs import _folder

runner = CliRunner()


@pytest.mark.parametrize(
    ("sweep", "message"), [("a,b", "--sweep takes comma-separated numbers"), ("0.2,1.5", "convex@W")]
)
def test_a_bad_sweep_fails_by_name(tmp_path: Path, sweep: str, message: str) -> None:
    folder = _folder(tmp_path / "tiny")
    result = runner.invoke(app, ["bench", "docs", "--data", str(folder), "--embedder", "hash", "--sweep", sweep])
    assert result.exit_code == 2 and message in result.output


def test_the_sweep_prints_the_weight_windows(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "tiny")
    args = ["bench", "docs", "--data", str(folder), "--embedder", "hash", "--batch", "4", "--config", "multi"]
    result = runner.invoke(app, [*args, "--sweep", "0,0.3"])
    assert result.exit_code == 0, result.output
    assert "| tiny | batch 4 | convex@0.3 |" in result.output
    assert "weights at or above both (MRR and R@10)" in result.output and "1 of 1 runs have a weight" in result.output
