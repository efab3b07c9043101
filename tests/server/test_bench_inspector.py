"""`memlane bench inspector` on a small scope: every page it times answers 200 and the report is JSON."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memlane.cli import app


def test_bench_inspector_small():
    r = CliRunner().invoke(app, ["bench", "inspector", "--n", "120", "--repeats", "1", "--embedder", "hash"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout[r.stdout.index("{") :])
    assert report["memories"] == 120 and report["embedder"] == "hash"
    pages = {p["page"]: p for p in report["pages"]}
    assert len(pages) == 20 and all(p["status"] == 200 for p in pages.values()), pages
    assert all(p["median_ms"] > 0 for p in pages.values())
