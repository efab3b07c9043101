"""``Memory.compact``: the files keep no byte of what was deleted, and every live memory stays as it was.

On PostgreSQL a delete leaves the row's old version in the table's pages and its words in the text index until
the space is reused; the test reads the relations' files through the server (``pg_read_binary_file``) and first
checks that the deleted text is there to be found, so that its absence afterwards means something.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane import Memory
from memlane.cli import app
from memlane.errors import StoreError

MARK = "quixotrelzzcompact"


def _fill(m: Memory) -> list[tuple[str, float]]:
    for i in range(30):
        m.add(f"filler turn {i} about gardening, tomatoes and the weather", user_id="bob", infer=False)
    m.add([f"My locker code is {MARK}.", f"Noted, {MARK} it is."], user_id="ana", infer=False)
    m.search(MARK, user_id="ana")
    before = [(h.memory.id, h.score) for h in m.search("tomatoes in the garden", user_id="bob")]
    m.delete_all(user_id="ana")
    return before


def test_compact_keeps_every_live_memory_on_every_backend(memory: Memory) -> None:
    before = _fill(memory)
    count = memory.stats().memories
    done = memory.compact()
    assert done.path == memory.stats().path
    assert memory.stats().memories == count == 30
    after = [(h.memory.id, h.score) for h in memory.search("tomatoes in the garden", user_id="bob")]
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-6)
    assert memory.search(MARK, user_id="ana") == []
    memory.add("a note after the compaction", user_id="bob", infer=False)  # the store goes on taking writes
    assert memory.stats().memories == 31


def test_sqlite_compact_shrinks_the_file_and_keeps_no_deleted_byte(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        for i in range(300):
            m.add(f"a long filler turn {i} " + "about nothing in particular " * 8, user_id="carl", infer=False)
        _fill(m)
        m.delete_all(user_id="carl")
        done = m.compact()
        files = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
        assert MARK.encode() not in files
        assert done.rewritten == ["database file"]
        assert done.size_after < done.size_before  # the deleted user's pages are given back
        assert done.size_after == m.stats().size_bytes


def test_a_read_only_store_refuses_to_compact(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        m.add("a note", user_id="ana", infer=False)
    with Memory(f"sqlite:///{db}?mode=ro", embedder="hash") as m, pytest.raises(StoreError, match="read-only"):
        m.compact()


def test_compact_from_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        _fill(m)
    env = {"MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash"}
    shown = CliRunner().invoke(app, ["compact", "--db", str(db), "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["rewritten"] == ["database file"]
    plain = CliRunner().invoke(app, ["compact", "--db", str(db)], env=env)
    assert plain.exit_code == 0 and "compacted" in plain.stdout


def _relation_bytes(url: str) -> bytes:
    """The main files (first segment) of every table, index and TOAST table of the test database, as stored."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute("CHECKPOINT")  # what is in shared buffers reaches the files
        paths = [
            r[0]
            for r in c.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'i', 't') AND n.nspname IN (current_schema(), 'pg_toast') "
                "AND pg_relation_filepath(c.oid) IS NOT NULL"
            ).fetchall()
        ]
        chunks = []
        for path in paths:
            try:
                chunks.append(bytes(c.execute("SELECT pg_read_binary_file(%s)", (path,)).fetchone()[0]))
            except psycopg.errors.UndefinedFile:  # a relation with no file yet (never written)
                continue
        return b"".join(chunks)


def test_postgres_compact_rewrites_the_tables_without_the_deleted_rows() -> None:
    from tests.pg_server import postgres_url

    url = postgres_url()
    with Memory(url, embedder="hash") as m:
        _fill(m)
        assert MARK.encode() in _relation_bytes(url)  # deleted, yet still in the pages and the text index
        done = m.compact()
        assert "memories" in done.rewritten and "history" in done.rewritten
        assert any("write-ahead log" in note for note in done.notes)
        assert MARK.encode() not in _relation_bytes(url)
        assert m.stats().memories == 30
