"""The technical set: passages as the rule builds them, labels as the rule gives them, splits by topic, and a run."""

from __future__ import annotations

import json
import platform
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.bench.labelled import SetReport
from memlane.bench.technical import (
    FIXTURE,
    MAX_CHARS,
    build_passages,
    label_passages,
    load_technical,
    query_topic,
    split_topic,
)
from memlane.cli import app

DOC = json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_passages_are_what_the_rule_builds_from_the_python_they_name() -> None:
    built_with = DOC["source"].split("built with Python ", 1)[1].split(".")[:2]
    if platform.python_version_tuple()[:2] != tuple(built_with):
        pytest.skip(f"passages were built with Python {'.'.join(built_with)}; the topics differ between versions")
    assert DOC["passages"] == build_passages()


def test_split_topic_packs_paragraphs_and_never_exceeds_the_cap() -> None:
    text = "Title\n*****\n\n" + "\n\n".join(f"para {i} " + "word " * 40 for i in range(10)) + "\n\n" + "x\n" * 900
    parts = split_topic(text)
    assert all(len(p) <= MAX_CHARS for p in parts) and len(parts) > 2
    assert parts[0].startswith("Title") and "para 0" in parts[0]
    assert "".join(parts).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(" ", "")


def test_every_label_is_what_the_labelling_rule_gives() -> None:
    passages = DOC["passages"]
    assert len(passages) >= 900 and all(len(p["text"]) <= MAX_CHARS for p in passages)
    for q in DOC["queries"]:
        assert q["evidence"] == label_passages(q["answer"], passages), q["qid"]
        assert q["evidence"], f"{q['qid']}: an answer sentence found in no passage"
        assert q["topic"] == query_topic(label_passages(q["answer"][:1], passages), passages)


def test_queries_kinds_and_topic_split() -> None:
    evalset = load_technical()
    assert len(evalset.queries) >= 150 and len(evalset.memories) == len(DOC["passages"])
    assert set(Counter(q.kind for q in evalset.queries)) == {"error", "howto", "ident"}
    split_of: dict[str, str] = {}
    for q in evalset.queries:
        assert split_of.setdefault(q.group, q.split) == q.split
    topics = sorted(split_of)
    assert DOC["split"]["tune"] == topics[0::3]
    assert {"tune", "holdout"} == set(split_of.values())
    # a query is not its answer: the answer sentence is not pasted into the query
    assert not [q["qid"] for q in DOC["queries"] if any(a.lower() in q["text"].lower() for a in q["answer"])]


def test_bench_technical_quick_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "technical.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "technical",
            "--quick",
            "--split",
            "holdout",
            "--embedder",
            "hash",
            "--config",
            "bm25",
            "--json",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    report = SetReport.model_validate_json(out.read_text())
    assert report.set_name == "technical" and report.split == "holdout" and report.scopes == ["pydocs"]
    assert {r.name for r in report.results} == {"bm25", "multi"}
    assert all(0 < len(r.questions) <= 25 for r in report.results)
