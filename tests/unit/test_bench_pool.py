"""``memlane bench pool``: the queries of several labelled-set runs pooled, presets every run has, paired tests."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.bench.docs import DocsReport
from memlane.bench.labelled import SetConfigResult, SetReport
from memlane.bench.locomo import QuestionRow
from memlane.bench.pool import load_runs, pool, render_pooled
from memlane.cli import app
from memlane.errors import ValidationError


def _row(qid: str, rank: int | None) -> QuestionRow:
    retrieved = [f"x{i}" for i in range(10)]
    if rank is not None:
        retrieved[rank - 1] = "gold"
    return QuestionRow(qid=qid, category=0, evidence=["gold"], retrieved=retrieved, tokens=[1] * 10, latency_ms=1.0)


def _result(name: str, ranks: dict[str, int | None], *, default: bool = False) -> SetConfigResult:
    rows = [_row(q, r) for q, r in ranks.items()]
    return SetConfigResult(
        name=name, is_default=default, groups=[], search_p50_ms=1.0, search_p95_ms=1.0, questions=rows
    )


def _run(name: str, results: list[SetConfigResult]) -> SetReport:
    return SetReport(
        set_name=name,
        split="all",
        scopes=["s"],
        memories=10,
        queries=len(results[0].questions),
        no_evidence=[],
        embedder="hash",
        machine="test",
        ingest_items_per_s=1.0,
        results=results,
    )


RUN_A = _run(
    "a",
    [
        _result("multi", {"q1": 1, "q2": 2}, default=True),
        _result("dense", {"q1": 2, "q2": None}),
        _result("bm25", {"q1": 1, "q2": 1}),  # only in this run: left out of the pool
    ],
)
RUN_B = _run("b", [_result("multi", {"q1": None}, default=True), _result("dense", {"q1": 1})])


def test_every_query_of_every_run_counts_once_over_the_presets_all_runs_have() -> None:
    pooled = pool([RUN_A, RUN_B], resamples=200)
    assert pooled.queries == 3 and pooled.default == "multi" and pooled.runs == ["a", "b"]
    mrr = {s.preset: s.mean for s in pooled.scores if s.metric == "mrr"}
    assert mrr == {"multi": pytest.approx((1 + 0.5 + 0) / 3), "dense": pytest.approx((0.5 + 0 + 1) / 3)}
    recall = {s.preset: s.mean for s in pooled.scores if s.metric == "recall@10"}
    assert recall == {"multi": pytest.approx(2 / 3), "dense": pytest.approx(2 / 3)}
    [vs_dense] = [c for c in pooled.comparisons if c.metric == "mrr"]
    assert vs_dense.preset == "dense" and vs_dense.delta == pytest.approx(0.0)
    assert "3 queries pooled from 2 runs" in render_pooled(pooled)


def test_runs_that_disagree_on_the_default_or_on_the_queries_are_refused() -> None:
    other_default = _run("c", [_result("dense", {"q1": 1}, default=True), _result("multi", {"q1": 1})])
    with pytest.raises(ValidationError, match="default"):
        pool([RUN_A, other_default])
    uneven = _run("d", [_result("multi", {"q1": 1}, default=True), _result("dense", {"q9": 1})])
    with pytest.raises(ValidationError, match="other queries"):
        pool([uneven])


def test_the_command_reads_docs_reports_and_set_reports_and_names_a_bad_file(tmp_path: Path) -> None:
    docs = tmp_path / "docs.json.gz"
    docs.write_bytes(gzip.compress(DocsReport(runs=[RUN_A]).model_dump_json().encode()))
    single = tmp_path / "b.json"
    single.write_text(RUN_B.model_dump_json(), encoding="utf-8")
    assert [r.set_name for r in load_runs([docs, single])] == ["a", "b"]
    result = CliRunner().invoke(app, ["bench", "pool", str(docs), str(single)])
    assert result.exit_code == 0, result.output
    assert "3 queries pooled from 2 runs" in result.output and "| dense | multi | mrr |" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "docs", "runs": "no"}', encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "pool", str(bad)])
    assert result.exit_code == 2 and "bad.json" in result.output


def test_the_benchmarks_page_shows_each_held_out_run_beside_the_baselines_and_their_pool(tmp_path: Path) -> None:
    from memlane.bench.report_docs import docs_section

    assert docs_section(tmp_path) == []  # no held-out report: no section
    ahead = _run(
        "x-faq-qa (batch 200)",
        [
            _result("multi", {"q1": 1, "q2": 2}, default=True),
            _result("dense", {"q1": 2, "q2": None}),
            _result("convex", {"q1": 1, "q2": 2}),
        ],
    )
    behind = _run(
        "y-faq-qa (batch 1)",
        [
            _result("multi", {"q1": 3}, default=True),
            _result("dense", {"q1": 1}),
            _result("convex", {"q1": 2}),
        ],
    )
    (tmp_path / "docs").mkdir()
    for i, run in enumerate((ahead, behind)):
        report = DocsReport(command=f"memlane bench docs --data set{i}", runs=[run])
        (tmp_path / "docs" / f"heldout-{i}.json.gz").write_bytes(gzip.compress(report.model_dump_json().encode()))
    text = "\n".join(docs_section(tmp_path))
    assert "| x-faq-qa (batch 200) | 2 | 0.750 / 1.000 | 0.250 / 0.500 | 0.750 / 1.000 | yes |" in text
    assert "| y-faq-qa (batch 1) | 1 | 0.333 / 1.000 | 1.000 / 1.000 | 0.500 / 1.000 | no |" in text
    assert "memlane bench docs --data set0" in text and "memlane bench docs --data set1" in text
    assert "3 queries pooled from 2 runs" in text
