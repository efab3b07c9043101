"""Usage counts of searches, gathered in memory and written in batches.

Every search returns hits whose access counts and last-access times feed the usage dimension and survival-based
eviction. Writing them at once would make each search a write transaction (a WAL commit, and the file's one write
lock taken by a read). They are gathered here instead and written together when enough have gathered, when the
oldest is a couple of seconds old, and before any other operation of the ``Memory`` that holds them reads or writes
memories, and on ``close``. Counts are best-effort, as they always were: a process that dies loses the uses not yet
written (while searches keep coming, at most a couple of seconds' worth).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime

from memlane.store.records import AccessUse

# (user, memory) pairs gathered before they are written: 256 take about 5 ms at 100k memories, 2,000 about 100 ms
MAX_PENDING = 256
MAX_AGE_S = 2.0  # seconds the oldest gathered use may wait


class AccessTally:
    """Thread-safe tally of memory uses not yet written to the store."""

    def __init__(self, *, max_pending: int = MAX_PENDING, max_age_s: float = MAX_AGE_S) -> None:
        self._lock = threading.Lock()
        self._uses: dict[str, dict[str, AccessUse]] = {}
        self._pending = 0
        self._since: float | None = None
        self._max_pending = max_pending
        self._max_age_s = max_age_s

    def __bool__(self) -> bool:
        return self._pending > 0

    def note(self, user_id: str, memory_ids: Sequence[str], at: datetime) -> bool:
        """Count one use of each memory at ``at``; whether the tally is due to be written."""
        with self._lock:
            mine = self._uses.setdefault(user_id, {})
            for mid in memory_ids:
                held = mine.get(mid)
                if held is None:
                    self._pending += 1
                    mine[mid] = AccessUse(1, at)
                else:
                    mine[mid] = AccessUse(held.times + 1, max(held.last, at))
            now = time.monotonic()
            if self._since is None:
                self._since = now
            return self._pending >= self._max_pending or now - self._since >= self._max_age_s

    def drain(self) -> dict[str, dict[str, AccessUse]]:
        """Everything gathered, by user, leaving the tally empty."""
        with self._lock:
            uses, self._uses = self._uses, {}
            self._pending, self._since = 0, None
            return uses
