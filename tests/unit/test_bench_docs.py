"""``memlane bench docs`` reads any BEIR folder and scores every preset in both ingest modes (a tiny fixture of our
own and the fake embedder: the harness, never a quality claim)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane.bench.docs import DocsReport, load_beir, render_docs_report, run_beir, run_docs
from memlane.errors import ValidationError

DOCS = {
    "d1": ("Tea", "Green tea is steeped at 80 degrees for two minutes."),
    "d2": ("Bikes", "Inflate the tyres of a road bike to about seven bar."),
    "d3": ("Bread", "Sourdough needs a starter fed the night before."),
    "d4": ("", "The harbour ferry leaves every hour from pier four."),
}
QUERIES = {"q1": "how hot should the water be for green tea?", "q2": "when does the ferry leave?", "q3": "unjudged"}
QRELS = [("q1", "d1", 1), ("q2", "d4", 1), ("q2", "d2", 0)]


def _folder(root: Path, *, qrels: list[tuple[str, str, int]] = QRELS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id, (title, text) in DOCS.items():
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text, "distractor": True}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text in QUERIES.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in qrels)]
    (root / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_a_beir_folder_reads_title_and_text_only(tmp_path: Path) -> None:
    beir = load_beir(_folder(tmp_path / "tiny"))
    assert beir.name == "tiny" and beir.documents["d1"].startswith("Tea\n\nGreen tea")
    assert beir.documents["d4"] == "The harbour ferry leaves every hour from pier four."
    assert "distractor" not in beir.documents["d2"]
    assert beir.qrels == {"q1": ("d1",), "q2": ("d4",)}  # a score of 0 is not relevant
    assert [q for q, _, _ in beir.scored()] == ["q1", "q2"]


def test_malformed_folders_fail_by_name(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "corpus.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "a" / "queries.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"no qrels\.tsv"):
        load_beir(tmp_path / "a")
    with pytest.raises(ValidationError, match="not in the corpus"):
        load_beir(_folder(tmp_path / "b", qrels=[("q1", "d9", 1)]))
    with pytest.raises(ValidationError, match="not a folder"):
        load_beir(tmp_path / "missing")


def test_every_preset_in_both_ingest_modes_is_scored_against_the_default(tmp_path: Path) -> None:
    report = run_docs([_folder(tmp_path / "tiny")], batches=(3, 1), presets=["dense", "bm25"], embedder="hash")
    assert [r.set_name for r in report.runs] == ["tiny (batch 3)", "tiny (batch 1)"]
    for run in report.runs:
        assert run.memories == 4 and run.queries == 3 and run.no_evidence == ["q3"]
        assert {r.name for r in run.results} == {"dense", "bm25", "multi"}
        assert sum(r.is_default for r in run.results) == 1
        assert {(c.config, c.metric) for c in run.comparisons} >= {("dense", "mrr"), ("bm25", "recall@10")}
        for res in run.results:
            assert len(res.questions) == 2 and all(len(q.retrieved) <= 10 for q in res.questions)
            # the answer is among four documents, so it is always in the top 10
            assert res.group("all").recall[10].mean == 1.0
    text = render_docs_report(report)
    assert "| tiny | batch 3 | multi (default) | 2 |" in text and "MRR@10" in text
    assert DocsReport.model_validate_json(report.model_dump_json()).runs[1].set_name == "tiny (batch 1)"


def test_a_kept_store_is_searched_again_without_a_second_ingest(tmp_path: Path) -> None:
    beir = load_beir(_folder(tmp_path / "tiny"))
    db = tmp_path / "kept.db"
    first = run_beir(beir, batch=2, presets=["dense"], embedder="hash", db_path=db)
    again = run_beir(beir, batch=2, presets=["dense"], embedder="hash", db_path=db)
    assert first.ingest_items_per_s > 0 and again.ingest_items_per_s == 0.0
    assert [q.retrieved for q in first.results[0].questions] == [q.retrieved for q in again.results[0].questions]
    with pytest.raises(ValidationError, match="batch must be at least 1"):
        run_beir(beir, batch=0, embedder="hash")


def test_stores_are_kept_per_set_and_mode_and_searched_again(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "tiny")
    first = run_docs([folder], batches=(2, 1), presets=["dense"], embedder="hash", stores=tmp_path / "stores")
    assert sorted(p.name for p in (tmp_path / "stores").glob("*.db")) == ["tiny-batch1.db", "tiny-batch2.db"]
    again = run_docs([folder], batches=(2, 1), presets=["dense"], embedder="hash", stores=tmp_path / "stores")
    assert all(r.ingest_items_per_s == 0.0 for r in again.runs)
    assert [q.retrieved for r in first.runs for q in r.results[0].questions] == [
        q.retrieved for r in again.runs for q in r.results[0].questions
    ]
