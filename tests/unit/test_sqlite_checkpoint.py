"""The write-ahead log is checkpointed on a background thread, not inside the commit that fills it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import memlane.store.sqlite.checkpoint as checkpoint
from memlane.store.sqlite.checkpoint import THRESHOLD_BYTES
from memlane.store.sqlite.db import Database


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
        _fill(db, 2 * THRESHOLD_BYTES // 4000)  # about twice the threshold in log pages
        deadline = time.monotonic() + 20
        # The first commit past the threshold wakes a checkpoint, which copies the log as it then is (the schema's
        # pages included), and later commits within INTERVAL wake none: how much filler reaches the file depends
        # on where the threshold falls among the commits; half of it copied shows the thread did the work
        while path.stat().st_size <= before + THRESHOLD_BYTES // 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.stat().st_size > before + THRESHOLD_BYTES // 2  # pages copied into the file
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


def test_a_commit_wakes_the_thread_only_past_the_threshold_and_at_most_every_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(tmp_path / "m.db")
    checkpointer = db._checkpointer
    assert checkpointer is not None
    wakes: list[int] = []
    real_set = checkpointer._wake.set

    def counted() -> None:
        wakes.append(1)
        real_set()

    monkeypatch.setattr(checkpointer._wake, "set", counted)
    try:
        _fill(db, 100)  # about 100 pages of log: under the threshold
        assert wakes == []
        monkeypatch.setattr(checkpoint, "INTERVAL", 3600.0)
        _fill(db, THRESHOLD_BYTES // 4000 + 200)  # past it: one wake, then none within the interval
        assert wakes == [1]
        monkeypatch.setattr(checkpoint, "INTERVAL", 0.0)
        for n in (2, 3):  # the log file stays past the threshold: with no interval every commit wakes
            with db.atomic() as c:
                c.execute("INSERT INTO filler VALUES (x'00')")
            assert len(wakes) == n
    finally:
        db.close()


def test_memlane_never_opens_sqlites_own_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it (SQLite's too): the
    checkpoint's wake reads the log's size with ``stat``, never by opening the log or its index.
    """
    import builtins
    import io

    opened: list[str] = []
    real_open = builtins.open

    def spy(file: object, *args: object, **kwargs: object) -> object:
        if str(file).endswith(("-wal", "-shm")):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    monkeypatch.setattr(checkpoint, "INTERVAL", 0.0)
    db = Database(tmp_path / "m.db")
    try:
        _fill(db, THRESHOLD_BYTES // 4000 + 200)
        assert db.truncate_wal()
    finally:
        db.close()
    assert opened == []
