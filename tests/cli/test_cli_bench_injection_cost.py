"""``memlane bench injection --cost``: CPU ms per text for the passages it is given, and a clear error otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.bench.injection_cost import docs_qa_corpora
from memlane.cli import app

runner = CliRunner()


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    passages = [f"Question {i}: how is the cache sized?\nSee the manual. It grows as needed." for i in range(6)]
    corpus.write_text("".join(json.dumps({"_id": str(i), "text": t}) + "\n" for i, t in enumerate(passages)))
    return corpus


def test_cost_with_a_missing_injection_folder_fails_naming_it(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["bench", "injection", "--cost", "--corpus", str(_corpus(tmp_path)), "--data", str(tmp_path / "none")],
    )
    # the injection folder is missing: its kinds cannot be read, and the command says which file
    assert result.exit_code != 0
    assert "none" in result.output


_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "injection"


@pytest.mark.skipif(not _DATA.is_dir(), reason="the labelled injection folder is not beside the repository")
def test_cost_prints_a_row_for_each_kind(tmp_path: Path) -> None:
    args = ["bench", "injection", "--cost", "--corpus", str(_corpus(tmp_path)), "--data", str(_DATA), "--limit", "3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split("|")[1].strip() for r in rows] == [
        "documents (docs-qa passages)",
        "documents (BIPIA e-mail, code, 1 table in 9)",
        "short prompts (deepset, NotInject)",
    ]
    assert all(r.split("|")[2].strip() == "3" and float(r.split("|")[3]) > 0.0 for r in rows)


def test_cost_without_injection_data_times_the_passages_alone(tmp_path: Path) -> None:
    from memlane.bench.injection_cost import cost_table

    table = cost_table([_corpus(tmp_path)], None, None, 4, "memlane bench injection --cost")
    row = next(line for line in table.splitlines() if line.startswith("| documents (docs-qa passages)"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "4" and float(cells[2]) > 0.0
    assert table.startswith("`memlane bench injection --cost`; load average ")


def test_the_docs_qa_corpora_are_found_from_the_repository_root() -> None:
    root = Path(__file__).resolve().parents[2]
    corpora = docs_qa_corpora(root)
    assert len(corpora) >= 10 and all(p.name == "corpus.jsonl" for p in corpora)
    assert docs_qa_corpora(root / "src") == []
