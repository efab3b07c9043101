"""Conversion between memory records and the rows both SQL stores keep (times as integer microseconds, JSON as
text), read the same by either.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from json.encoder import encode_basestring  # what the encoder writes for a string when ensure_ascii is off
from typing import Any, Final

from memlane.models import InjectionFlag, MemoryItem, MemoryKind, SourceRef

COLUMNS: Final = (
    "id, user_id, agent_id, session_id, kind, role, speaker, text, ts, created_at, updated_at, event_time, "
    "importance, confidence, access_count, last_accessed, content_hash, sources, metadata, position, event_end, "
    "category, intent, entities, valid_from, valid_until, superseded_by"
)
# The columns a ``replace`` may change (all but id, user_id and the embed hash), in ``COLUMNS`` order.
MUTABLE: Final = tuple(c.strip() for c in COLUMNS.split(","))[2:]
SELECT_ITEM: Final = f"SELECT {COLUMNS} FROM memories m"


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
# ``json.dumps(value, ensure_ascii=False)``, without building an encoder per call (as dumps does for any option);
# an empty list or mapping is written as its literal without calling it.
_JSON: Final = json.JSONEncoder(ensure_ascii=False).encode


def _json_names(names: list[str]) -> str:
    """``_JSON(names)`` for a list of strings: each string as the encoder writes it, without its per-call set-up
    (a quarter of the time); anything else goes through the encoder.
    """
    if not names:
        return "[]"
    try:
        return "[" + ", ".join(map(encode_basestring, names)) + "]"
    except TypeError:  # not all strings
        return _JSON(names)


def to_micros(value: datetime) -> int:
    """An aware datetime as integer microseconds since the epoch (exact round trip)."""
    delta = value.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    """Inverse of :func:`to_micros`."""
    return _EPOCH + timedelta(microseconds=value)


def _opt_micros(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def _opt_time(value: int | None) -> datetime | None:
    return None if value is None else from_micros(value)


def item_params(item: MemoryItem, embed_hash: str) -> tuple[Any, ...]:
    """The row values of an item, in ``COLUMNS`` order followed by ``embed_hash``."""
    return (
        item.id,
        item.user_id,
        item.agent_id,
        item.session_id,
        item.kind.value,
        item.role,
        item.speaker,
        item.text,
        to_micros(item.timestamp),
        to_micros(item.created_at),
        to_micros(item.updated_at),
        _opt_micros(item.event_time),
        item.importance,
        item.confidence,
        item.access_count,
        _opt_micros(item.last_accessed),
        item.content_hash,
        _JSON([s.model_dump(mode="json") for s in item.sources]) if item.sources else "[]",
        _JSON(item.metadata) if item.metadata else "{}",
        item.position,
        _opt_micros(item.event_end),
        item.category,
        item.intent,
        _json_names(item.entities),
        _opt_micros(item.valid_from),
        _opt_micros(item.valid_until),
        item.superseded_by,
        embed_hash,
    )


def _loads(text: str) -> Any:
    """``json.loads``, with the empty list and object (most rows' sources, metadata and entities) read directly."""
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return json.loads(text)


def row_to_item(row: tuple[Any, ...]) -> MemoryItem:
    """Build a ``MemoryItem`` from a row selected with ``SELECT_ITEM``."""
    sources = [SourceRef.model_validate(s) for s in _loads(row[17])]
    return MemoryItem.model_construct(
        id=row[0],
        user_id=row[1],
        agent_id=row[2],
        session_id=row[3],
        kind=MemoryKind(row[4]),
        role=row[5],
        speaker=row[6],
        text=row[7],
        timestamp=from_micros(row[8]),
        created_at=from_micros(row[9]),
        updated_at=from_micros(row[10]),
        event_time=_opt_time(row[11]),
        importance=row[12],
        confidence=row[13],
        access_count=row[14],
        last_accessed=_opt_time(row[15]),
        content_hash=row[16],
        sources=sources,
        metadata=_loads(row[18]),
        position=row[19],
        event_end=_opt_time(row[20]),
        category=row[21],
        intent=row[22],
        entities=_loads(row[23]),
        valid_from=_opt_time(row[24]),
        valid_until=_opt_time(row[25]),
        superseded_by=row[26],
    )


def flag_from_row(row: Sequence[Any]) -> InjectionFlag:
    """An injection flag from its ``memory_flags`` columns: memory_id, score, reasons, detector, flagged_at."""
    return InjectionFlag(
        memory_id=str(row[0]),
        score=float(row[1]),
        reasons=list(json.loads(str(row[2]))),
        detector=str(row[3]),
        flagged_at=from_micros(int(row[4])),
    )
