"""The history log: every change of a memory, written in the transaction that makes it."""

from __future__ import annotations

import builtins
import json
from datetime import datetime
from typing import Any

import psycopg

from memlane.models import HistoryEntry, HistoryEvent
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import run
from memlane.store.sqlite.rows import from_micros, to_micros


def log_event(
    c: psycopg.Connection[Any],
    user_id: str,
    memory_id: str,
    event: HistoryEvent,
    at: datetime,
    old_text: str | None = None,
    new_text: str | None = None,
    changes: dict[str, Any] | None = None,
) -> None:
    """Append one history record inside the caller's transaction."""
    run(
        c,
        "INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (memory_id, user_id, event.value, to_micros(at), old_text, new_text, json.dumps(changes or {}, default=str)),
    )


def erase_text(c: psycopg.Connection[Any], user_id: str, memory_id: str) -> None:
    """Forget the words a memory's history holds (its events stay)."""
    run(
        c,
        "UPDATE history SET old_text = NULL, new_text = NULL, changes = '{}' WHERE user_id = %s AND memory_id = %s",
        (user_id, memory_id),
    )


class PostgresHistory:
    """Reading the history log."""

    _db: Database

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEntry]:
        rows = self._db.read(
            "SELECT event, at, old_text, new_text, changes FROM history WHERE user_id = %s AND memory_id = %s "
            "ORDER BY seq",
            (user_id, memory_id),
            scope=user_id,
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
