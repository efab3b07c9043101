"""Memory rows in PostgreSQL: the columns selected as the shared row conversion reads them, running SQL, and
filters rendered as SQL with ``%s`` parameters.
"""

from __future__ import annotations

import json
from typing import Any, Final

import numpy as np
import psycopg

from memlane.errors import ValidationError
from memlane.models import Filters
from memlane.store.sqlite.rows import COLUMNS, to_micros

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


def _in_clause(column: str, value: str | list[str]) -> tuple[str, list[Any]]:
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        return "false", []
    return f"{column} = ANY(%s)", [[str(v) for v in values]]


def validity_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """Current memories only (the default), those valid ``as_of`` a time, or all (messages always pass)."""
    if filters.as_of is not None:
        at = to_micros(filters.as_of)
        return (
            f"({alias}.valid_from IS NULL OR {alias}.valid_from <= %s) AND "
            f"({alias}.valid_until IS NULL OR {alias}.valid_until > %s)"
        ), [at, at]
    if filters.include_superseded:
        return "true", []
    return f"{alias}.valid_until IS NULL", []


def content_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """The filters other than validity as a SQL condition (``"true"`` when empty) with its parameters."""
    parts: list[str] = []
    params: list[Any] = []
    for field in ("session_id", "agent_id", "kind", "role", "speaker"):
        value = getattr(filters, field)
        if value is None:
            continue
        value = [getattr(v, "value", v) for v in value] if isinstance(value, list) else getattr(value, "value", value)
        clause, values = _in_clause(f"{alias}.{field}", value)
        parts.append(clause)
        params.extend(values)
    if filters.since is not None:
        parts.append(f"{alias}.ts >= %s")
        params.append(to_micros(filters.since))
    if filters.until is not None:
        parts.append(f"{alias}.ts < %s")
        params.append(to_micros(filters.until))
    for key, value in filters.metadata.items():
        if not key:
            raise ValidationError("metadata filter keys must be non-empty")
        if value is None:  # absent, or JSON null (as SQLite's json_extract reads both)
            parts.append(f"coalesce({alias}.metadata -> %s, 'null'::jsonb) = 'null'::jsonb")
            params.append(key)
        elif isinstance(value, bool):  # SQLite compares booleans as 1 and 0
            parts.append(f"{alias}.metadata -> %s IN (%s::jsonb, %s::jsonb)")
            params.extend([key, json.dumps(value), json.dumps(int(value))])
        elif isinstance(value, int | float | str):
            parts.append(f"{alias}.metadata -> %s = %s::jsonb")
            params.extend([key, json.dumps(value)])
        else:
            raise ValidationError(f"metadata filter {key!r} must be a string, number, boolean or null")
    return (" AND ".join(parts) or "true"), params


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """The filters, validity included, as a SQL condition (``"true"`` when they select everything)."""
    where, params = content_sql(filters, alias)
    valid, vparams = validity_sql(filters, alias)
    if valid == "true":
        return where, params
    if where == "true":
        return valid, vparams
    return f"{where} AND {valid}", [*params, *vparams]
