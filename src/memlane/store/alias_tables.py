"""Each user's entity table as this process last read it, kept while the table's version token has not moved.

Every write to a user's entity table (an add that learns an alias, a merge, an erasure's orphan clean-up, a copy
between stores) sets the user's row of ``entity_versions`` to a new random token, by trigger, in the transaction of
the write, whoever wrote it. A reader reads the token first and then the table, so a table read after a later
commit is at worst cached under the older token and read again next time; a token is random, so a rolled-back or
erased table never comes back under the token of another. A user without a token row (none written yet, or erased)
is never cached.

Why: a chat turn's ``add`` reads its user's whole table to resolve the turn's names, and the table grows with
every person, place and alias the user has mentioned (1,210 rows in the scale bench's scope of 100,000 memories).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from memlane.records.entities import AliasRow

#: Users whose tables one process keeps (the most recently read); the rest are read again when asked.
HELD_USERS = 256


class AliasTables:
    """The cache: ``(token, rows)`` by user, least recently used dropped first. Thread-safe."""

    def __init__(self, capacity: int = HELD_USERS) -> None:
        self._capacity = capacity
        self._held: OrderedDict[str, tuple[int, tuple[AliasRow, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, user_id: str, token: int | None) -> list[AliasRow] | None:
        """The rows held for this user if they were read at ``token``; None otherwise (and nothing is held)."""
        with self._lock:
            held = self._held.get(user_id)
            if held is None:
                return None
            if token is None or held[0] != token:
                del self._held[user_id]
                return None
            self._held.move_to_end(user_id)
            return list(held[1])

    def token(self, user_id: str) -> int | None:
        """The token of the rows held for this user (None when none are held)."""
        with self._lock:
            held = self._held.get(user_id)
            return None if held is None else held[0]

    def put(self, user_id: str, token: int | None, rows: list[AliasRow]) -> None:
        """Hold rows read after reading ``token`` (not held when the user has no token)."""
        if token is None:
            return
        with self._lock:
            self._held[user_id] = (token, tuple(rows))
            self._held.move_to_end(user_id)
            while len(self._held) > self._capacity:
                self._held.popitem(last=False)

    def forget(self, user_id: str) -> None:
        """Drop a user's rows (their memories or the user were erased)."""
        with self._lock:
            self._held.pop(user_id, None)
