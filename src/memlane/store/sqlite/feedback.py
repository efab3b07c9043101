"""The feedback log in this backend's dialect (``memlane.store.sql.feedback``)."""

from __future__ import annotations

from typing import ClassVar

from memlane.store.sql.dialect import SQLITE, Dialect
from memlane.store.sql.feedback import SQLFeedback
from memlane.store.sqlite.db import Database


class SQLiteFeedback(SQLFeedback[Database]):
    """Judgements recorded by ``Memory.feedback``; the latest word on a (user, query, memory) wins."""

    _dialect: ClassVar[Dialect] = SQLITE
