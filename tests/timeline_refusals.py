"""The timeline arguments every edge refuses (REST ``GET /v1/timeline`` with a 400, the MCP ``timeline`` tool with a
tool error), each with a word the refusal must name."""

from __future__ import annotations

from typing import Any

REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"after": "not a cursor"}, "cursor"),
    ({"after": "yesterday|abc"}, "ISO 8601"),
    ({"kind": "gossip"}, "kind"),
    ({"flagged_only": "perhaps"}, "flagged_only"),
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
    ({"limit": "ten"}, "limit"),
    ({"category": ""}, "category"),
    ({"entity": ""}, "entity"),
    ({"after": "x" * 513}, "after"),
]
