"""Copying the write-ahead log into the database file on a thread of its own, so that no commit waits for it.

SQLite's automatic checkpoint runs inside the COMMIT that takes the log past its threshold, and with it the two
``fsync`` calls of a checkpoint: on a bulk ingest the writer spent about a fifth of its wall time waiting for them.
Here the writer's connection has automatic checkpoints off, and after a commit that takes the log past the same
threshold (1,000 frames, SQLite's default) it wakes this thread, which runs the same ``PASSIVE`` checkpoint SQLite
would have run, on its own connection, while the writer goes on. What is written, and when a commit is durable,
do not change: in WAL mode with ``synchronous = NORMAL`` a commit never waited for an ``fsync``; the log is synced
by the checkpoint, as before, only no longer on the writer's time.
"""

from __future__ import annotations

import logging
import sqlite3
import struct
import threading
from pathlib import Path
from typing import Final

log = logging.getLogger(__name__)

#: Pages in the log past which a commit asks for a checkpoint: SQLite's own ``wal_autocheckpoint`` default.
THRESHOLD_PAGES: Final = 1000
# The log index begins with two copies of its header (48 bytes each), then the checkpoint record; in native byte
# order: ``mxFrame`` (frames in the log) at byte 16 of the header, ``nBackfill`` (frames copied) at byte 96.
_INDEX_HEADER: Final = 100
_U32: Final = struct.Struct("=I")
#: Where the log index cannot be read (no ``-shm`` file: another locking mode or VFS), the log's size decides: a
#: bound well above the threshold's 4 MB of default pages, so that the log can never grow without a checkpoint.
FALLBACK_BYTES: Final = 64 * 1024 * 1024


class Checkpointer:
    """A daemon thread with its own connection that checkpoints the log of ``path`` when woken (``after_commit``).

    ``lock`` is held while a checkpoint runs: whoever needs the log emptied now (an erasure's TRUNCATE) takes it
    so as not to find the log busy with this thread's checkpoint.
    """

    def __init__(self, path: str) -> None:
        self.lock = threading.Lock()
        self._wal = Path(f"{path}-wal")
        self._index = Path(f"{path}-shm")
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 10000")
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"memlane-checkpoint:{path}", daemon=True)
        self._thread.start()

    def after_commit(self) -> None:
        """Wake the thread when the log holds at least the threshold's frames, some not yet copied: SQLite's own
        test for its automatic checkpoint, read from the log's index (the ``-shm`` file, whose header layout is
        part of SQLite's documented file format: https://www.sqlite.org/walformat.html).
        """
        try:
            with self._index.open("rb") as f:
                header = f.read(_INDEX_HEADER)
        except OSError:
            header = b""
        if len(header) < _INDEX_HEADER:
            try:
                if self._wal.stat().st_size > FALLBACK_BYTES:
                    self._wake.set()
            except OSError:
                pass
            return
        frames, copied = _U32.unpack_from(header, 16)[0], _U32.unpack_from(header, 96)[0]
        if frames >= THRESHOLD_PAGES and frames > copied:
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            with self.lock:
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as exc:  # the next commit past the threshold tries again
                    log.warning("could not checkpoint the write-ahead log of %s: %s", self._wal, exc)

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self._conn.close()
