"""The write path's shortcuts give what the plain computations they replace give: row values, history rows and
idempotency keys."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest

from memlane.engine import content_hash, message_hash, normalise_text
from memlane.models import HistoryEvent, MemoryItem, MemoryKind, SourceRef
from memlane.store.sqlite.history import log_events
from memlane.store.sqlite.rows import COLUMNS, item_params

T0 = datetime(2024, 3, 1, tzinfo=UTC)
_JSON_COLUMNS = ("sources", "metadata", "entities")


def _item(**fields: Any) -> MemoryItem:
    return MemoryItem(
        id="m1",
        user_id="u",
        kind=MemoryKind.MESSAGE,
        role="user",
        text="Ünïcode text",
        timestamp=T0,
        created_at=T0,
        updated_at=T0,
        content_hash="h",
        **fields,
    )


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"entities": ["josé", "my sister"], "metadata": {"k": "ü", "n": [1, None]}},
        {"entities": ['say "hi"\\', "tab\there\n\x00", "😀 \u2028"]},
        {"sources": [SourceRef(memory_id="m0", name="Zoë “Z”", timestamp=T0)], "metadata": {}},
    ],
)
def test_json_columns_equal_json_dumps(fields: dict[str, Any]) -> None:
    item = _item(**fields)
    names = [c.strip() for c in COLUMNS.split(",")]
    row = dict(zip(names, item_params(item, "e"), strict=False))
    expected = {
        "sources": json.dumps([s.model_dump(mode="json") for s in item.sources], ensure_ascii=False),
        "metadata": json.dumps(item.metadata, ensure_ascii=False),
        "entities": json.dumps(item.entities, ensure_ascii=False),
    }
    assert {name: row[name] for name in _JSON_COLUMNS} == expected


def test_history_changes_equal_json_dumps() -> None:
    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE history (memory_id, user_id, event, at, old_text, new_text, changes)")
    given: list[dict[str, Any] | None] = [None, {}, {"when": T0, "n": 1}]
    log_events(c, [("u", f"m{i}", HistoryEvent.ADD, T0, None, "t", ch) for i, ch in enumerate(given)])
    stored = [r[0] for r in c.execute("SELECT changes FROM history ORDER BY rowid")]
    assert stored == [json.dumps(ch or {}, default=str) for ch in given]


@pytest.mark.parametrize("text", ["Hello  World", "Straße ǅ", "  ", "e\u0301", 'a "quoted"\\ \x01 😀'])
@pytest.mark.parametrize(("ts", "occurrence"), [(None, 0), (None, 2), (T0, 0)])
def test_message_hash_equals_the_json_dumps_digest(text: str, ts: datetime | None, occurrence: int) -> None:
    scope: list[Any] = ["u", None, "s", MemoryKind.MESSAGE.value, normalise_text(text)]
    payload = scope if ts is None and occurrence == 0 else [*scope, ts and ts.isoformat(), occurrence]
    digest = hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()
    assert message_hash("u", None, "s", text, ts, occurrence) == digest
    assert (
        message_hash("u", "agent “a”", None, text, ts, occurrence)
        == hashlib.sha256(
            json.dumps(["u", "agent “a”", None, *payload[3:]], ensure_ascii=False).encode("utf-8")
        ).hexdigest()
    )
    assert message_hash("u", None, "s", text, ts, occurrence, normalised=normalise_text(text)) == digest
    if ts is None and occurrence == 0:
        assert content_hash("u", None, "s", MemoryKind.MESSAGE.value, text) == digest
