"""Memory rows in PostgreSQL: the columns selected as the shared row conversion reads them, running SQL, and
filters rendered as SQL with ``%s`` parameters (``memlane.store.sql.filters`` in PostgreSQL's dialect).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import psycopg

from memlane.models import Filters
from memlane.store.sql.dialect import POSTGRES
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.rows import COLUMNS

# ``COLUMNS`` as ``row_to_item`` (shared with the SQLite store) reads them: the JSON column cast to text, and the
# access counts with those of ``memory_usage`` added (counts since the row was written; see migration 0007).
_USAGE: Final = "(SELECT u.{0} FROM memory_usage u WHERE u.pk = m.pk)"
_SELECTED_AS: Final = {
    "metadata": "m.metadata::text",
    "access_count": f"m.access_count + coalesce({_USAGE.format('access_count')}, 0)",
    "last_accessed": f"greatest(m.last_accessed, {_USAGE.format('last_accessed')})",
}
SELECTED: Final = ", ".join(_SELECTED_AS.get(c, f"m.{c}") for c in (c.strip() for c in COLUMNS.split(",")))
SELECT_ITEM: Final = f"SELECT {SELECTED} FROM memories m"


def run(c: psycopg.Connection[Any], sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
    """Execute one statement on ``c`` (SQL is built here from constants, never from values)."""
    return c.execute(sql.encode(), params)


def as_array(value: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A vector read from the database as a float32 array (pgvector's loader gives a ``Vector``)."""
    raw = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(raw, dtype=np.float32)


FILTERS: Final = FilterSQL(POSTGRES)


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """The filters, validity included, as a condition with ``%s`` parameters (``"true"`` when they select
    everything), for the statements this backend writes itself.
    """
    where, params = FILTERS.filter_sql(filters, alias)
    return POSTGRES.sql(where), params
