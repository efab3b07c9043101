"""``memlane.bench.injection_cost`` times the detector on each kind of text it is given and says so in a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane.bench.injection_cost import corpus_texts, main, measure
from memlane.security.detect import RulesDetector


def test_the_table_times_the_corpus_passages(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    passages = [f"Passage {i}: how to set the option\nsee the manual page." for i in range(7)]
    corpus.write_text("\n".join(json.dumps({"_id": str(i), "text": t}) for i, t in enumerate(passages)) + "\n")
    assert sorted(corpus_texts([corpus], 100)) == sorted(passages)
    assert len(corpus_texts([corpus], 3)) == 3
    table = main(["--corpus", str(corpus), "--limit", "5"])
    row = next(line for line in table.splitlines() if line.startswith("| documents (docs-qa passages)"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "5"
    assert float(cells[2]) > 0.0 and float(cells[3]) > 0.0


def test_nothing_to_time_is_an_error() -> None:
    with pytest.raises(ValueError, match="no texts"):
        measure(RulesDetector(), "empty", [])
    assert measure(RulesDetector(), "one", ["hello"]).n == 1
