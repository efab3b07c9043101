"""The write-ahead log is checkpointed on a background thread, not inside the commit that fills it."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from memlane.store.sqlite.checkpoint import THRESHOLD_PAGES
from memlane.store.sqlite.db import Database


def _uncopied(path: Path) -> int:
    """Frames of the log not yet copied into the file, from the log index's header (SQLite's WAL format)."""
    header = Path(f"{path}-shm").read_bytes()[:100]
    return int(struct.unpack_from("=I", header, 16)[0] - struct.unpack_from("=I", header, 96)[0])


def _fill(db: Database, rows: int, width: int = 4000) -> None:
    with db.atomic() as c:
        c.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    for _ in range(rows // 100):
        with db.atomic() as c:
            c.executemany("INSERT INTO filler VALUES (randomblob(?))", [(width,)] * 100)


def test_commits_leave_the_checkpoint_to_the_background_thread(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    db = Database(path)
    try:
        assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert db._checkpointer is not None
        before = path.stat().st_size
        _fill(db, 2 * THRESHOLD_PAGES)  # about twice the threshold in log pages
        deadline = time.monotonic() + 20
        while path.stat().st_size <= before + THRESHOLD_PAGES * 4096 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.stat().st_size > before + THRESHOLD_PAGES * 4096  # pages copied into the file
        assert db.truncate_wal()  # an erasure still empties the log at once
        assert Path(f"{path}-wal").stat().st_size == 0
    finally:
        db.close()
    assert not Path(f"{path}-wal").exists()  # the last connection's close checkpoints and removes the log


def test_close_stops_the_thread_and_memory_stores_have_none(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    checkpointer = db._checkpointer
    assert checkpointer is not None
    db.close()
    assert not checkpointer._thread.is_alive()
    memory = Database(":memory:")
    try:
        assert memory._checkpointer is None
    finally:
        memory.close()


def test_a_commit_wakes_the_thread_only_past_the_threshold(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    checkpointer = db._checkpointer
    assert checkpointer is not None
    wakes: list[int] = []
    real_set = checkpointer._wake.set

    def counted() -> None:
        wakes.append(1)
        real_set()

    checkpointer._wake.set = counted  # type: ignore[method-assign]
    try:
        _fill(db, 100)  # about 100 frames: under the threshold
        assert wakes == []
        _fill(db, THRESHOLD_PAGES + 100)
        assert wakes  # past it
        deadline = time.monotonic() + 20
        while _uncopied(tmp_path / "m.db") and time.monotonic() < deadline:  # the checkpoint it woke is done
            time.sleep(0.01)
        assert not _uncopied(tmp_path / "m.db")
        wakes.clear()
        _fill(db, 100)  # the log starts again from its beginning: a large log file alone wakes nothing
        assert wakes == []
    finally:
        db.close()


def test_without_a_readable_log_index_the_log_size_still_wakes_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.store.sqlite.checkpoint as checkpoint

    db = Database(tmp_path / "m.db")
    try:
        cp = db._checkpointer
        assert cp is not None
        monkeypatch.setattr(cp, "_index", tmp_path / "no-such-index")
        monkeypatch.setattr(checkpoint, "FALLBACK_BYTES", 1024)
        cp._wake.clear()
        _fill(db, 100)  # the log grows past the (lowered) fallback bound
        cp._wake.clear()
        cp.after_commit()
        assert cp._wake.is_set()
    finally:
        db.close()
