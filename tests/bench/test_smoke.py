"""Smoke test of the benchmark harness: `--quick` runs end to end and produce a sensible report.

It uses the hash embedder (a test double), so its numbers say nothing about quality; they only show that the
harness measures, writes JSON and renders the report. Peers are covered when their packages are installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.bench.locomo import LocomoReport, read_text
from memlane.bench.report import write_report
from memlane.cli import app

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo_dev.json"
MEMORYBANK = DATA / "memorybank"

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not found beside the repository")


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_quick_memlane_bench_writes_a_sensible_report(tmp_path: Path) -> None:
    results = tmp_path / "results"
    invoke("bench", "locomo", "--data", str(LOCOMO), "--quick", "--embedder", "hash",
           "--json", str(results / "locomo.json.gz"))  # fmt: skip
    invoke("bench", "scale", "--data", str(LOCOMO), "--memorybank", str(MEMORYBANK), "--quick",
           "--embedder", "hash", "--json", str(results / "scale.json"))  # fmt: skip
    invoke("bench", "report", "--results", str(results), "--out", str(tmp_path / "benchmarks.md"),
           "--img", str(tmp_path / "img"))  # fmt: skip

    report = LocomoReport.model_validate_json(read_text(results / "locomo.json.gz"))
    assert report.conversations == ["conv-30"]
    assert {"bm25", "dense"} <= {r.name for r in report.results}
    assert sum(r.is_default for r in report.results) == 1
    for res in report.results:
        for group in [*res.categories, res.overall]:
            for est in [*group.recall.values(), group.ndcg10, group.mrr]:
                assert 0.0 <= est.low <= est.mean <= est.high <= 1.0
        assert res.overall.recall[20].mean >= res.overall.recall[1].mean
    assert max(r.overall.recall[10].mean for r in report.results) > 0.2
    assert report.comparisons and all(0 < c.p_value <= 1 for c in report.comparisons)

    scale = json.loads((results / "scale.json").read_text())
    assert [(p["size"], p["users"]) for p in scale["points"]] == [(1000, 1), (1000, 100)]
    assert all(p["ingest_items_per_s"] > 0 and p["search_p50_ms"] > 0 and p["disk_bytes"] > 0 for p in scale["points"])
    assert all(p["first_search_ms"] > 0 for p in scale["points"])  # the index build or load, timed apart
    assert all(p["reopen_search_ms"] > 0 for p in scale["points"])  # and after the store is opened again

    md = (tmp_path / "benchmarks.md").read_text()
    assert "## Retrieval quality on LoCoMo" in md and "## Scale" in md
    assert "bench locomo" in md and "(default) | overall 1-4" in md
    if (tmp_path / "img").exists():
        assert (tmp_path / "img" / "locomo_recall_at_k.png").stat().st_size > 1000


def test_quick_peers_bench_with_the_bm25_floor(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    out = tmp_path / "peers.json.gz"
    invoke("bench", "peers", "--data", str(LOCOMO), "--memorybank", str(MEMORYBANK), "--quick",
           "--embedder", "hash", "--json", str(out))  # fmt: skip
    data = json.loads(read_text(out))
    assert [q["info"]["system"] for q in data["quality"]] == ["memlane", "bm25s"]
    assert all(q["result"]["overall"]["recall"]["10"]["mean"] > 0.1 for q in data["quality"])
    assert {p["system"] for p in data["speed"]} == {"memlane", "bm25s"}
    assert all(i["network_attempts"] == [] for i in data["systems"])
    written = write_report(tmp_path, tmp_path / "benchmarks.md", tmp_path / "img")
    assert "memlane/peer" in written[0].read_text()


def test_committed_docs_match_the_committed_results(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    results, committed = root / "docs" / "results", root / "docs" / "benchmarks.md"
    if not results.is_dir() or not committed.exists():
        pytest.skip("no committed benchmark results")
    fresh = write_report(results, tmp_path / "benchmarks.md", tmp_path / "img", plots=False)[0]
    assert fresh.read_text() == committed.read_text(), "docs/benchmarks.md is stale: run `memlane bench report`"


def test_bench_ann_measures_the_stores_own_graph() -> None:
    """``bench ann``'s ``memlane-*`` candidates are the store's ``HnswVectors`` (a bf16 graph rescored in float32)."""
    import numpy as np

    from memlane.bench.ann import candidates, exact_top

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1_200, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    names = [c[0] for c in candidates(1_200, ["memlane-"])]
    assert names == ["memlane-f32", "memlane-f16", "memlane-bf16"]
    builder = candidates(1_200, ["memlane-bf16"])[0][2]
    built = builder(x[:1_100], x[1_100:])
    assert built.note == "count=50, rescored in float32" and built.file_mb > 0
    found = [built.search(q, 10) for q in x[:20]]
    truth = [exact_top(x, q, 10).tolist() for q in x[:20]]
    assert np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)]) >= 0.95
    assert built.filtered is not None and built.filtered(x[0], 3, np.arange(10, 60, dtype=np.int64))[0] in range(10, 60)
