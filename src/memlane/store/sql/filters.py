"""Search and list filters rendered as a SQL condition with ``?`` parameters, once for both SQL stores."""

from __future__ import annotations

from typing import Any

from memlane.errors import ValidationError
from memlane.models import Filters
from memlane.store.sql.dialect import Dialect
from memlane.store.sql.rows import to_micros

_FIELDS = ("session_id", "agent_id", "kind", "role", "speaker")


class FilterSQL:
    """``Filters`` as a condition over ``memories`` (``dialect.true`` when they select everything)."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect

    def validity_sql(self, filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
        """The validity part of the filters: current memories only (the default), those valid ``as_of`` a time, or
        all. Raw messages have no validity window and always pass.
        """
        if filters.as_of is not None:
            at = to_micros(filters.as_of)
            return (
                f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) AND "
                f"({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"
            ), [at, at]
        if filters.include_superseded:
            return self.d.true, []
        return f"{alias}.valid_until IS NULL", []

    def content_sql(self, filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
        """The filters other than validity as a condition with its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        for field in _FIELDS:
            value = getattr(filters, field)
            if value is None:
                continue
            value = (
                [getattr(v, "value", v) for v in value] if isinstance(value, list) else getattr(value, "value", value)
            )
            values = [value] if isinstance(value, str) else list(value)
            clause, bound = self.d.in_list(f"{alias}.{field}", [str(v) for v in values])
            parts.append(clause)
            params.extend(bound)
        if filters.since is not None:
            parts.append(f"{alias}.ts >= ?")
            params.append(to_micros(filters.since))
        if filters.until is not None:
            parts.append(f"{alias}.ts < ?")
            params.append(to_micros(filters.until))
        for key, value in filters.metadata.items():
            if not key:
                raise ValidationError("metadata filter keys must be non-empty")
            if value is not None and not isinstance(value, bool | int | float | str):
                raise ValidationError(f"metadata filter {key!r} must be a string, number, boolean or null")
            clause, bound = self.d.json_field_is(f"{alias}.metadata", key, value)
            parts.append(clause)
            params.extend(bound)
        return (" AND ".join(parts) or self.d.true), params

    def filter_sql(self, filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
        """The filters, validity included, as one condition."""
        where, params = self.content_sql(filters, alias)
        valid, vparams = self.validity_sql(filters, alias)
        if valid == self.d.true:
            return where, params
        if where == self.d.true:
            return valid, vparams
        return f"{where} AND {valid}", [*params, *vparams]

    def only_current(self, filters: Filters) -> bool:
        """True when the filters ask for nothing but current memories (the default): a cheap exclusion suffices."""
        return filters.as_of is None and not filters.include_superseded and self.content_sql(filters)[0] == self.d.true

    def is_empty(self, filters: Filters) -> bool:
        """True when the filters select everything."""
        return self.filter_sql(filters)[0] == self.d.true
