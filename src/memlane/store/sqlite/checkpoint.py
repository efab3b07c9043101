"""Copying the write-ahead log into the database file on a thread of its own, so that no commit waits for it.

SQLite's automatic checkpoint runs inside the COMMIT that takes the log past its threshold, and with it the two
``fsync`` calls of a checkpoint: on a bulk ingest the writer spent about a fifth of its wall time waiting for them.
Here the writer's connection has automatic checkpoints off, and after a commit that leaves the log file past the
same threshold (1,000 pages of 4 KiB, SQLite's default) it wakes this thread, at most every ``INTERVAL`` seconds,
which runs a ``PASSIVE`` checkpoint on its own connection while the writer goes on. What is written, and when a
commit is durable, do not change: in WAL mode with ``synchronous = NORMAL`` a commit never waited for an ``fsync``;
the log is synced by the checkpoint, as before, only no longer on the writer's time.

The log's size is read with ``stat`` and nothing else: memlane never opens SQLite's own files (the log, its
``-shm`` index). Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
included, and another process may then reset an index this one still maps (a crash, or a corrupt database). A log
file does not shrink after a checkpoint (SQLite writes it again from the start), so its size alone would wake a
checkpoint after every commit; the interval bounds that to a few checkpoints a second, each cheap when there is
nothing new to copy.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Final

log = logging.getLogger(__name__)

#: Bytes of log past which a commit asks for a checkpoint: SQLite's ``wal_autocheckpoint`` default of 1,000 pages,
#: at the default page size.
THRESHOLD_BYTES: Final = 1000 * 4096
#: Seconds between two wakes at most (a log past the threshold stays past it: see the module's docstring).
INTERVAL: Final = 0.5


class Checkpointer:
    """A daemon thread with its own connection that checkpoints the log of ``path`` when woken (``after_commit``).

    ``lock`` is held while a checkpoint runs: whoever needs the log emptied now (an erasure's TRUNCATE) takes it
    so as not to find the log busy with this thread's checkpoint.
    """

    def __init__(self, path: str) -> None:
        self.lock = threading.Lock()
        self._wal = Path(f"{path}-wal")
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 10000")
        self._wake = threading.Event()
        self._stopping = False
        self._last_wake = -math.inf  # (monotonic time starts near 0 at boot: a 0.0 here held off the first wake)
        self._thread = threading.Thread(target=self._run, name=f"memlane-checkpoint:{path}", daemon=True)
        self._thread.start()

    def after_commit(self) -> None:
        """Wake the thread when the log file is past the threshold and the last wake is ``INTERVAL`` old."""
        now = time.monotonic()
        if now - self._last_wake < INTERVAL:
            return
        try:
            size = self._wal.stat().st_size
        except OSError:
            return
        if size > THRESHOLD_BYTES:
            self._last_wake = now
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
