"""Filters rendered as SQLite SQL; the row conversion both SQL stores share lives in ``memlane.store.sql.rows``."""

from __future__ import annotations

from typing import Any

from memlane.errors import ValidationError
from memlane.models import Filters
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


def _in_clause(column: str, value: str | list[str]) -> tuple[str, list[Any]]:
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        return "0", []
    return f"{column} IN ({', '.join('?' * len(values))})", [str(v) for v in values]


def _json_path(key: str) -> str:
    if not key:
        raise ValidationError("metadata filter keys must be non-empty")
    return '$."' + key.replace('"', '""') + '"'


def validity_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """The validity part of the filters: current memories only (the default), those valid ``as_of`` a time, or all.

    Raw messages have no validity window and always pass.
    """
    if filters.as_of is not None:
        at = to_micros(filters.as_of)
        return (
            f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) AND "
            f"({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"
        ), [at, at]
    if filters.include_superseded:
        return "1", []
    return f"{alias}.valid_until IS NULL", []


def only_current(filters: Filters) -> bool:
    """True when the filters ask for nothing but current memories (the default): a cheap exclusion suffices."""
    return filters.as_of is None and not filters.include_superseded and content_sql(filters)[0] == "1"


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """Render filters, validity included, as a SQL condition (``"1"`` when they select everything)."""
    where, params = content_sql(filters, alias)
    valid, vparams = validity_sql(filters, alias)
    if valid == "1":
        return where, params
    if where == "1":
        return valid, vparams
    return f"{where} AND {valid}", [*params, *vparams]


def content_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """Render the filters other than validity as a SQL condition (``"1"`` when empty) with its parameters."""
    parts: list[str] = []
    params: list[Any] = []
    for field, column in (
        ("session_id", "session_id"),
        ("agent_id", "agent_id"),
        ("kind", "kind"),
        ("role", "role"),
        ("speaker", "speaker"),
    ):
        value = getattr(filters, field)
        if value is None:
            continue
        value = [getattr(v, "value", v) for v in value] if isinstance(value, list) else getattr(value, "value", value)
        clause, values = _in_clause(f"{alias}.{column}", value)
        parts.append(clause)
        params.extend(values)
    if filters.since is not None:
        parts.append(f"{alias}.ts >= ?")
        params.append(to_micros(filters.since))
    if filters.until is not None:
        parts.append(f"{alias}.ts < ?")
        params.append(to_micros(filters.until))
    for key, value in filters.metadata.items():
        path = _json_path(key)
        if value is None:
            parts.append(f"json_extract({alias}.metadata, ?) IS NULL")
            params.append(path)
        elif isinstance(value, bool | int | float | str):
            parts.append(f"json_extract({alias}.metadata, ?) = ?")
            params.extend([path, int(value) if isinstance(value, bool) else value])
        else:
            raise ValidationError(f"metadata filter {key!r} must be a string, number, boolean or null")
    return (" AND ".join(parts) or "1"), params


def is_empty(filters: Filters) -> bool:
    """True when the filters select everything."""
    return filter_sql(filters)[0] == "1"
