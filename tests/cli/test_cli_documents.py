"""``memlane add-docs``: files and JSONL records stored as documents, re-adding skipped, bad input one line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import env, run  # noqa: F401  (the fixture)


def test_files_become_documents_and_search_names_the_passage(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    note = tmp_path / "okapi.md"
    note.write_text("The okapi lives in the Ituri rainforest.\n\nIt is related to the giraffe.\n", encoding="utf-8")
    lines = tmp_path / "faq.jsonl"
    lines.write_text(
        json.dumps({"text": "Rebase rewrites history.", "title": "git", "source": "faq#1"})
        + "\n"
        + '"A plain note."\n',
        encoding="utf-8",
    )
    assert "stored 1 document" in run(env, "add-docs", "--user", "ana", str(note)).stdout
    assert "1 already stored" in run(env, "add-docs", "--user", "ana", str(note)).stdout
    stored = json.loads(run(env, "add-docs", "--user", "ana", "--jsonl", str(lines), "--json").stdout)
    assert [d["kind"] for d in stored] == ["document", "document"] and stored[0]["metadata"]["source"] == "faq#1"
    hits = json.loads(run(env, "search", "okapi rainforest", "--user", "ana", "--json").stdout)
    top = hits[0]
    assert top["memory"]["metadata"] == {"title": "okapi.md", "source": str(note)}
    assert top["passage"]["start"] == 0 and top["memory"]["session_id"] is None


def test_bad_input_is_one_line_and_exit_2(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    missing = run(env, "add-docs", "--user", "ana", str(tmp_path / "nope.md"), ok=False)
    assert missing.exit_code == 2 and "cannot read" in missing.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x", "colour": "red"}\n', encoding="utf-8")
    refused = run(env, "add-docs", "--user", "ana", "--jsonl", str(bad), ok=False)
    assert refused.exit_code == 2 and "document 0 is invalid" in refused.output
