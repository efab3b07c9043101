"""A memory's filter fields as a Qdrant payload, and ``Filters`` as the Qdrant filter that selects the same memories.

The translation mirrors ``store/sql/filters.py``'s ``filter_sql`` condition by condition (times as integer
microseconds, validity as in ``validity_sql``), so that filtering happens inside Qdrant and selects what SQLite would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from qdrant_client import models as qm

from memlane.errors import ValidationError
from memlane.models import Filters
from memlane.store.sql.rows import to_micros

#: The payload fields the filters read, in the order of the SQL row that feeds them (``payload_of``).
PAYLOAD_SQL = (
    "m.id, m.user_id, m.agent_id, m.session_id, m.kind, m.role, m.speaker, m.ts, m.valid_from, m.valid_until, "
    "m.metadata"
)
_SIMPLE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def payload_of(row: Sequence[Any]) -> dict[str, Any]:
    """The point payload of a row selected with ``PAYLOAD_SQL``: ids and filter fields, never the text."""
    return {
        "memory_id": row[0],
        "user_id": row[1],
        "agent_id": row[2],
        "session_id": row[3],
        "kind": row[4],
        "role": row[5],
        "speaker": row[6],
        "ts": row[7],
        "valid_from": row[8],
        "valid_until": row[9],
        "metadata": json.loads(row[10]) if row[10] else {},
    }


def _values(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(getattr(v, "value", v)) for v in items]


def _metadata_key(key: str) -> str:
    if not key:
        raise ValidationError("metadata filter keys must be non-empty")
    if _SIMPLE_KEY.match(key):
        return f"metadata.{key}"
    if '"' in key:
        raise ValidationError(f"metadata filter key {key!r}: a double quote cannot be filtered on in Qdrant")
    return f'metadata."{key}"'


def _metadata_condition(key: str, value: Any) -> qm.Condition:
    path = _metadata_key(key)
    if value is None:
        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=path))
    if isinstance(value, bool | int | str):
        return qm.FieldCondition(key=path, match=qm.MatchValue(value=value))
    if isinstance(value, float):
        return qm.FieldCondition(key=path, range=qm.Range(gte=value, lte=value))
    raise ValidationError(f"metadata filter {key!r} must be a string, number, boolean or null")


def _validity(filters: Filters) -> list[qm.Condition]:
    if filters.as_of is not None:
        at = to_micros(filters.as_of)
        started = qm.Filter(
            should=[
                qm.IsEmptyCondition(is_empty=qm.PayloadField(key="valid_from")),
                qm.FieldCondition(key="valid_from", range=qm.Range(lte=at)),
            ]
        )
        running = qm.Filter(
            should=[
                qm.IsEmptyCondition(is_empty=qm.PayloadField(key="valid_until")),
                qm.FieldCondition(key="valid_until", range=qm.Range(gt=at)),
            ]
        )
        return [started, running]
    if filters.include_superseded:
        return []
    return [qm.IsEmptyCondition(is_empty=qm.PayloadField(key="valid_until"))]


def to_qdrant(user_id: str, filters: Filters) -> qm.Filter | None:
    """The Qdrant filter for one user's memories passing ``filters``; ``None`` when nothing can pass (an empty list)."""
    must: list[qm.Condition] = [qm.FieldCondition(key="user_id", match=qm.MatchValue(value=user_id))]
    for name in ("session_id", "agent_id", "kind", "role", "speaker"):
        value = getattr(filters, name)
        if value is None:
            continue
        values = _values(value)
        if not values:
            return None
        must.append(qm.FieldCondition(key=name, match=qm.MatchAny(any=values)))
    if filters.since is not None or filters.until is not None:
        must.append(
            qm.FieldCondition(
                key="ts",
                range=qm.Range(
                    gte=None if filters.since is None else to_micros(filters.since),
                    lt=None if filters.until is None else to_micros(filters.until),
                ),
            )
        )
    must.extend(_metadata_condition(k, v) for k, v in filters.metadata.items())
    must.extend(_validity(filters))
    return qm.Filter(must=must)
