"""Identifiers of new memories: 32 hex characters that sort in the order they were made.

The first 12 are the milliseconds since the epoch, the next 4 a counter of this process (ids made in one
millisecond keep their order), the last 16 random (64 bits). Ranking ties are broken by id, so equal scores order
by creation, the same way in every run, where random ids gave a different order each time (two runs of a benchmark
disagreed on the order of duplicate passages). An id reveals when its memory was made, as its ``created_at`` does.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from typing import Final

#: The length of every id ``new_id`` makes (so ``Config.max_id_chars`` may not be below it).
ID_CHARS: Final = 32
_COUNTER: Final = itertools.count()
_LOCK: Final = threading.Lock()


def new_id() -> str:
    """A new memory id (time-ordered within a process, unique across processes by its random part)."""
    with _LOCK:
        n = next(_COUNTER) & 0xFFFF
    return f"{time.time_ns() // 1_000_000:012x}{n:04x}{secrets.token_hex(8)}"
