"""The memlane command line, end to end on a real SQLite file with the test embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.cli import app

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash", "MEMLANE_DB": str(tmp_path / "m.db")}


def run(env: dict[str, str], *args: str, input: str | None = None, ok: bool = True):
    result = runner.invoke(app, list(args), env=env, input=input)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_add_search_get_list_delete_history(env) -> None:
    out = run(env, "add", "--user", "ana", "I adopted a beagle called Biscuit", "--json").stdout
    item, pet = json.loads(out)  # the message, and the pet it names
    assert (item["kind"], pet["kind"], pet["text"]) == ("message", "entity", "Biscuit is the user's beagle.")
    run(env, "add", "--user", "ana", "My sister lives in Porto")
    hits = json.loads(run(env, "search", "beagle", "--user", "ana", "--json").stdout)
    # the message and the pet distilled from it lead, in either order
    assert {h["memory"]["id"] for h in hits[:2]} == {item["id"], pet["id"]}
    assert "dense" in hits[0]["breakdown"]
    table = run(env, "search", "beagle", "--user", "ana", "--explain").stdout
    assert "Biscuit" in table and "raw=" in table
    assert json.loads(run(env, "get", item["id"], "--user", "ana").stdout)["text"].endswith("Biscuit")
    listed = json.loads(run(env, "list", "--user", "ana", "--json").stdout)
    said = [m["text"] for m in listed if m["kind"] == "message"]
    assert said == ["I adopted a beagle called Biscuit", "My sister lives in Porto"]
    assert [m["text"] for m in listed if m["kind"] != "message"] == [
        "Biscuit is the user's beagle.",
        "The user's sister lives in Porto.",
    ]
    run(env, "delete", item["id"], "--user", "ana")
    events = json.loads(run(env, "history", item["id"], "--user", "ana").stdout)
    assert [e["event"] for e in events] == ["ADD", "DELETE"]
    missing = run(env, "get", item["id"], "--user", "ana", ok=False)
    assert missing.exit_code == 2 and "no memory" in missing.stderr


def test_add_from_jsonl_stdin_and_json_file(env, tmp_path: Path) -> None:
    lines = "\n".join(
        json.dumps(
            {"role": "user", "name": "Tim", "content": f"turn {i} about chess", "timestamp": "2024-01-02T10:00:00Z"}
        )
        for i in range(5)
    )
    run(env, "add", "--user", "tim", "--file", "-", "--session", "s1", input=lines)
    file = tmp_path / "msgs.json"
    file.write_text(json.dumps([{"role": "assistant", "content": "chess is fun"}, "plain string message"]))
    run(env, "add", "--user", "tim", "--file", str(file))
    stats = json.loads(run(env, "stats", "--json", "--user", "tim").stdout)
    assert stats["memories"] == 7
    only_s1 = json.loads(run(env, "list", "--user", "tim", "--session", "s1", "--json").stdout)
    assert len(only_s1) == 5 and only_s1[0]["speaker"] == "Tim"


def test_export_import_round_trip(env, tmp_path: Path) -> None:
    run(env, "add", "--user", "u", "remember the milk")
    dump = tmp_path / "dump.jsonl"
    run(env, "export", str(dump))
    other = {**env, "MEMLANE_DB": str(tmp_path / "other.db")}
    assert "imported 1" in run(other, "import", str(dump), "--user", "u").stdout
    a = json.loads(run(env, "list", "--user", "u", "--json").stdout)
    b = json.loads(run(other, "list", "--user", "u", "--json").stdout)
    assert a == b


def test_errors_are_clear_and_exit_2(env, tmp_path: Path) -> None:
    r = run(env, "add", "--user", "u", "   ", ok=False)
    assert r.exit_code == 2 and "empty" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "ok"}\n{oops\n')
    r = run(env, "add", "--user", "u", "--file", str(bad), ok=False)
    assert r.exit_code == 2 and "line 2" in r.stderr
    r = run(env, "search", "x", "--user", "u", "--preset", "nope", ok=False)
    assert r.exit_code == 2 and "unknown retrieval preset" in r.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"garbage" * 200)
    r = run({**env, "MEMLANE_DB": str(junk)}, "stats", ok=False)
    assert r.exit_code == 2 and "junk.db" in r.stderr
    assert json.loads(run(env, "stats", "--json").stdout)["memories"] == 0


def test_reindex_and_delete_all(env) -> None:
    run(env, "add", "--user", "u", "one")
    run(env, "add", "--user", "u", "two")
    assert "re-embedded 2" in run(env, "reindex").stdout
    assert "deleted 2" in run(env, "delete", "--all", "--user", "u").stdout


def test_demo_runs(env) -> None:
    out = run(env, "demo").stdout
    assert "memlane demo" in out and "Pepper" in out
    assert json.loads(run(env, "stats", "--json").stdout)["memories"] == 0  # in memory only


def test_demo_keep_stores_the_conversation_for_the_inspector(env) -> None:
    run(env, "demo", "--keep")
    stats = json.loads(run(env, "stats", "--user", "maya", "--json").stdout)
    assert stats["memories"] >= 23  # the 23 turns, and what was extracted from them


def test_every_command_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    commands = [c.name or c.callback.__name__ for c in app.registered_commands]  # type: ignore[union-attr]
    for name in [*commands, "bench locomo"]:
        assert f"memlane {name}" in readme, f"README does not document `memlane {name}`"


def test_observe_then_ask_with_explain(env, tmp_path: Path) -> None:
    frames = tmp_path / "frames.jsonl"
    lines = [
        {"caption": "[person_1:Person] feeds the [cat_1:Animal]", "timestamp": "2026-03-02T18:00:00Z",
         "media": "f/1.jpg", "names": {"person_1": "Dana", "cat_1": "Miso"}},
        {"caption": "[person_1:Person] feeds the [cat_1:Animal]", "timestamp": "2026-03-03T18:00:00Z", "media": "f/2.jpg"},
    ]  # fmt: skip
    frames.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    assert "stored 2 observation(s)" in run(env, "observe", str(frames), "--user", "home").stdout
    assert "0 observation(s), 2 already stored" in run(env, "observe", str(frames), "--user", "home").stdout
    shown = run(env, "ask", "How many times did Dana feed Miso?", "--user", "home", "--explain").stdout
    assert "answer: 2" in shown and "sql: SELECT" in shown and "route: structured" in shown
    data = json.loads(run(env, "ask", "Did Dana feed Miso?", "--user", "home", "--json").stdout)
    assert data["route"] == "structured" and data["answer"] == "yes" and data["structured"]["statements"]
    bad = run(env, "observe", str(tmp_path / "missing.jsonl"), "--user", "home", ok=False)
    assert bad.exit_code == 2
