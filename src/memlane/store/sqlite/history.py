"""The history log in this backend's dialect: the shared statements (``memlane.store.sql.history``) bound to it."""

from __future__ import annotations

from typing import ClassVar, Final

from memlane.store.sql.dialect import SQLITE, Dialect
from memlane.store.sql.history import HistoryLog, SQLHistory
from memlane.store.sqlite.db import Database

_LOG: Final = HistoryLog(SQLITE)
log_event: Final = _LOG.log_event
log_events: Final = _LOG.log_events
erase_text: Final = _LOG.erase_text


class SQLiteHistory(SQLHistory[Database]):
    """Reading the history log."""

    _dialect: ClassVar[Dialect] = SQLITE
