"""The history log: every change of a memory, written in the transaction that makes it."""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from memlane.models import HistoryEntry, HistoryEvent
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import from_micros, to_micros


def log_event(
    c: sqlite3.Connection,
    user_id: str,
    memory_id: str,
    event: HistoryEvent,
    at: datetime,
    old_text: str | None = None,
    new_text: str | None = None,
    changes: dict[str, Any] | None = None,
) -> None:
    """Append one history record inside the caller's transaction."""
    log_events(c, [(user_id, memory_id, event, at, old_text, new_text, changes)])


# ``json.dumps(value, default=str)``, without building an encoder per call (as dumps does for any option)
_JSON: Final = json.JSONEncoder(default=str).encode

HistoryRow = tuple[str, str, HistoryEvent, datetime, str | None, str | None, dict[str, Any] | None]


def log_events(c: sqlite3.Connection, rows: Sequence[HistoryRow]) -> None:
    """Append history records (``log_event``'s arguments, in order) in one statement."""
    c.executemany(
        "INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (memory_id, user_id, event.value, to_micros(at), old, new, _JSON(changes) if changes else "{}")
            for user_id, memory_id, event, at, old, new, changes in rows
        ],
    )


def erase_text(c: sqlite3.Connection, user_id: str, memory_id: str) -> None:
    """Forget the words a memory's history holds (its events stay)."""
    c.execute(
        "UPDATE history SET old_text = NULL, new_text = NULL, changes = '{}' WHERE user_id = ? AND memory_id = ?",
        (user_id, memory_id),
    )


class SQLiteHistory:
    """Reading the history log."""

    _db: Database

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEntry]:
        rows = self._db.read(
            "SELECT event, at, old_text, new_text, changes FROM history WHERE user_id = ? AND memory_id = ? ORDER BY seq",
            (user_id, memory_id),
        )
        return [
            HistoryEntry(
                memory_id=memory_id,
                event=HistoryEvent(r[0]),
                at=from_micros(r[1]),
                old_text=r[2],
                new_text=r[3],
                changes=json.loads(r[4]),
            )
            for r in rows
        ]
