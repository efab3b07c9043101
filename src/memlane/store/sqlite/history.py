"""The history log in this backend's dialect: the shared statements (``memlane.store.sql.history``) bound to it."""

from __future__ import annotations

from typing import ClassVar, Final

from memlane.store.sql.dialect import SQLITE, Dialect
from memlane.store.sql.history import HistoryLog, SQLHistory
from memlane.store.sqlite.db import Database

HISTORY_LOG: Final = HistoryLog(SQLITE)
log_event: Final = HISTORY_LOG.log_event
log_events: Final = HISTORY_LOG.log_events
erase_text: Final = HISTORY_LOG.erase_text


class SQLiteHistory(SQLHistory[Database]):
    """Reading the history log."""

    _dialect: ClassVar[Dialect] = SQLITE
