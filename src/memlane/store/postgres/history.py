"""The history log in this backend's dialect: the shared statements (``memlane.store.sql.history``) bound to it."""

from __future__ import annotations

from typing import ClassVar, Final

from memlane.store.postgres.db import Database
from memlane.store.sql.dialect import POSTGRES, Dialect
from memlane.store.sql.history import HistoryLog, SQLHistory

HISTORY_LOG: Final = HistoryLog(POSTGRES)
log_event: Final = HISTORY_LOG.log_event
log_events: Final = HISTORY_LOG.log_events
erase_text: Final = HISTORY_LOG.erase_text


class PostgresHistory(SQLHistory[Database]):
    """Reading the history log."""

    _dialect: ClassVar[Dialect] = POSTGRES
