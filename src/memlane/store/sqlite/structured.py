"""Structured-question primitives on SQLite: the shared statements (``memlane.store.sql.structured``), their word
groups matched by FTS5.

Words reach FTS5 as one bound MATCH expression of double-quoted single words (``Match`` admits nothing else), so
they are matched, never parsed as FTS syntax.
"""

from __future__ import annotations

from typing import Any, ClassVar

from memlane.store.sql.dialect import SQLITE, Dialect
from memlane.store.sql.structured import SQLStructuredIndex
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.text import scope_token


def fts_expression(user_id: str, groups: tuple[tuple[str, ...], ...]) -> str:
    """The FTS5 MATCH value: the user's scope token and, for every group, one of its (quoted) words in the body."""
    parts = [f"scope : {scope_token(user_id)}"]
    for group in groups:
        quoted = " OR ".join('"' + word.replace('"', '""') + '"' for word in group)
        parts.append(f"body : ({quoted})")
    return " AND ".join(parts)


class SQLiteStructuredIndex(SQLStructuredIndex[Database]):
    """``StructuredIndex`` over the memory, entity and text tables."""

    _dialect: ClassVar[Dialect] = SQLITE

    def _word_groups(self, user_id: str, groups: tuple[tuple[str, ...], ...]) -> tuple[list[str], list[Any]]:
        return ["m.pk IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)"], [
            fts_expression(user_id, groups)
        ]
