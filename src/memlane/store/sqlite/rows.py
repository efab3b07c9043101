"""Filters rendered as SQLite SQL (``memlane.store.sql.filters`` in SQLite's dialect) and the row conversion both
SQL stores share (``memlane.store.sql.rows``), under the names this backend's modules import.
"""

from __future__ import annotations

from typing import Final

from memlane.store.sql.dialect import SQLITE
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.rows import (
    COLUMNS,
    MUTABLE,
    SELECT_ITEM,
    from_micros,
    item_params,
    row_to_item,
    to_micros,
)

__all__ = [
    "COLUMNS",
    "MUTABLE",
    "SELECT_ITEM",
    "content_sql",
    "filter_sql",
    "from_micros",
    "is_empty",
    "item_params",
    "only_current",
    "row_to_item",
    "to_micros",
    "validity_sql",
]

FILTERS: Final = FilterSQL(SQLITE)
validity_sql: Final = FILTERS.validity_sql
content_sql: Final = FILTERS.content_sql
filter_sql: Final = FILTERS.filter_sql
only_current: Final = FILTERS.only_current
is_empty: Final = FILTERS.is_empty
