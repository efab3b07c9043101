"""The feedback log in this backend's dialect (``memlane.store.sql.feedback``)."""

from __future__ import annotations

from typing import ClassVar

from memlane.store.postgres.db import Database
from memlane.store.sql.dialect import POSTGRES, Dialect
from memlane.store.sql.feedback import SQLFeedback


class PostgresFeedback(SQLFeedback[Database]):
    """Judgements recorded by ``Memory.feedback``; the latest word on a (user, query, memory) wins."""

    _dialect: ClassVar[Dialect] = POSTGRES
