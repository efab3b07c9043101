"""A store opened read-only serves reads; usage tracking never fails a read; a damaged index says what is damaged."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from memlane import Memory
from memlane.errors import ConfigError, CorruptStoreError, StoreError


def _filled(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        m.add(["I adopted a beagle called Biscuit", "Biscuit loves the park"], user_id="ana", infer=False)
        m.search("beagle", user_id="ana")  # builds and saves the vector index beside the file
    return db


def _files(db: Path) -> dict[str, int]:
    # SQLite itself may create the -wal/-shm companions to read a WAL file; memlane's own files must not change.
    return {
        str(p): p.stat().st_mtime_ns
        for p in db.parent.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_a_store_opened_read_only_serves_reads_and_refuses_writes(tmp_path: Path) -> None:
    db = _filled(tmp_path)
    before = _files(db)
    with Memory(f"sqlite:///{db}?mode=ro", embedder="hash") as m:
        counts = {item.id: item.access_count for item in m.list(user_id="ana")}
        hits = m.search("beagle", user_id="ana")
        assert hits and hits[0].memory.text == "I adopted a beagle called Biscuit"
        assert {item.id: item.access_count for item in m.list(user_id="ana")} == counts  # nothing written
        assert m.stats(user_id="ana").users == 1
        with pytest.raises(StoreError, match="read-only"):
            m.add("a new note", user_id="ana", infer=False)
        with pytest.raises(StoreError, match="read-only"):
            m.delete(hits[0].memory.id, user_id="ana")
    assert _files(db) == before  # not a byte written, index files included


def test_read_only_open_of_a_missing_file_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such file"):
        Memory(f"sqlite:///{tmp_path / 'nope.db'}?mode=ro", embedder="hash")


def test_unknown_sqlite_url_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mode=ro"):
        Memory(f"sqlite:///{tmp_path / 'x.db'}?cache=shared", embedder="hash")


def test_usage_tracking_failing_does_not_fail_a_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db = _filled(tmp_path)
    with Memory(db, embedder="hash") as m:
        store = m._store

        def full_disk(*args: object, **kwargs: object) -> None:
            raise StoreError("database or disk is full")

        monkeypatch.setattr(store, "record_access", full_disk)
        hits = m.search("beagle", user_id="ana")
        assert hits
        # The counts are written before the next call that reads memories: that call still succeeds.
        with caplog.at_level(logging.WARNING, logger="memlane.engine"):
            assert m.get(hits[0].memory.id, user_id="ana").text == hits[0].memory.text
        assert "access counts not recorded: database or disk is full" in caplog.text


def test_a_damaged_full_text_index_is_named(tmp_path: Path) -> None:
    db = _filled(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE memories_fts_config")  # a shadow table of the FTS5 index
    conn.commit()
    conn.close()
    with Memory(db, embedder="hash") as m, pytest.raises(CorruptStoreError, match="full-text index is damaged"):
        m.search("beagle", user_id="ana", preset_name="bm25")
