"""Reading memory rows in PostgreSQL: the shared reads (``memlane.store.sql.reads``) over the columns as selected
here (the access counts of ``memory_usage`` added).
"""

from __future__ import annotations

from typing import ClassVar

from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import FILTERS, SELECTED
from memlane.store.sql.dialect import POSTGRES, Dialect
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.reads import SQLReads


class PostgresReads(SQLReads[Database]):
    """Memory rows by id, hash and filters; every query names the user."""

    _dialect: ClassVar[Dialect] = POSTGRES
    _filters: ClassVar[FilterSQL] = FILTERS
    _selected: ClassVar[str] = SELECTED
