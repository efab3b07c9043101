"""The history log, once for both SQL stores: every change of a memory, written in the transaction that makes it."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Final, Generic, TypeVar

from memlane.models import HistoryEntry, HistoryEvent
from memlane.store.sql.dialect import Connection, Dialect, Reader
from memlane.store.sql.rows import from_micros, to_micros

# ``json.dumps(value, default=str)``, without building an encoder per call (as dumps does for any option)
_JSON: Final = json.JSONEncoder(default=str).encode

HistoryRow = tuple[str, str, HistoryEvent, datetime, str | None, str | None, dict[str, Any] | None]

_INSERT: Final = (
    "INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class HistoryLog:
    """Writing the history log in one dialect, inside the caller's transaction."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect

    def log_event(
        self,
        c: Connection,
        user_id: str,
        memory_id: str,
        event: HistoryEvent,
        at: datetime,
        old_text: str | None = None,
        new_text: str | None = None,
        changes: dict[str, Any] | None = None,
    ) -> None:
        """Append one history record."""
        self.d.run(c, _INSERT, _row((user_id, memory_id, event, at, old_text, new_text, changes)))

    def log_events(self, c: Connection, rows: Sequence[HistoryRow]) -> None:
        """Append history records (``log_event``'s arguments, in order) in one call."""
        self.d.run_many(c, _INSERT, [_row(r) for r in rows])

    def erase_text(self, c: Connection, user_id: str, memory_id: str) -> None:
        """Forget the words a memory's history holds (its events stay)."""
        self.d.run(
            c,
            "UPDATE history SET old_text = NULL, new_text = NULL, changes = '{}' WHERE user_id = ? AND memory_id = ?",
            (user_id, memory_id),
        )


def _row(row: HistoryRow) -> tuple[Any, ...]:
    user_id, memory_id, event, at, old, new, changes = row
    return (memory_id, user_id, event.value, to_micros(at), old, new, _JSON(changes) if changes else "{}")


R = TypeVar("R", bound=Reader)


class SQLHistory(Generic[R]):
    """Reading the history log (mixed into a backend's store, which names its dialect)."""

    _db: R
    _dialect: ClassVar[Dialect]

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEntry]:
        rows = self._dialect.read(
            self._db,
            "SELECT event, at, old_text, new_text, changes FROM history WHERE user_id = ? AND memory_id = ? ORDER BY seq",
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
