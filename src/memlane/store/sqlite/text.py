"""The FTS5 text index: one entry per memory (its body, the previous turn's words, its user's scope), BM25 search."""

from __future__ import annotations

import builtins
import hashlib
import sqlite3
from collections.abc import Sequence
from typing import Final

from memlane.models import Filters, MemoryItem, MemoryKind
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import filter_sql, is_empty, only_current

# BM25 weight of the previous turn's words relative to the memory's own (the FTS column ``ctx``).
CONTEXT_WEIGHT: Final = 0.4
_SCORE: Final = f"-bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}, 0.0)"


def scope_token(user_id: str) -> str:
    """The FTS token that confines a text search to one user's memories."""
    return "u" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:24]


def fts_match(user_id: str, terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of ``terms`` in the body or its context, within the user's scope."""
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f"scope : {scope_token(user_id)} AND {{body ctx}} : ({quoted})"


def previous_turn(c: sqlite3.Connection, item: MemoryItem) -> str:
    """The text of the turn before ``item`` in its session: indexed beside it, so that an answer ("A sunset.") is
    found by the words of the question it answers ("What did you paint?").
    """
    if item.kind != MemoryKind.MESSAGE or not item.position:
        return ""
    row = c.execute(
        "SELECT text FROM memories WHERE user_id = ? AND session_id IS ? AND position = ? AND kind = 'message'",
        (item.user_id, item.session_id, item.position - 1),
    ).fetchone()
    return str(row[0]) if row else ""


def index_entry(c: sqlite3.Connection, pk: int, item: MemoryItem, body: str, ctx: str | None = None) -> None:
    """Write a memory's entry (``ctx`` defaults to the previous turn's text)."""
    c.execute(
        "INSERT INTO memories_fts (rowid, body, ctx, scope) VALUES (?, ?, ?, ?)",
        (pk, body, previous_turn(c, item) if ctx is None else ctx, scope_token(item.user_id)),
    )


def drop_entry(c: sqlite3.Connection, pk: int) -> None:
    """Remove a memory's entry."""
    c.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))


class SQLiteTextIndex:
    """BM25 search in FTS5, confined to a user by the scope token."""

    _db: Database

    def text_search(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        if not terms or (limit is not None and limit <= 0):
            return []
        # One pass over the matches: FTS5 scores every match anyway to rank them, and probing single
        # rows with MATCH afterwards would re-run the whole query per row.
        tail = "" if limit is None else f" ORDER BY s DESC LIMIT {int(limit)}"
        if is_empty(filters) or only_current(filters):
            current = "" if is_empty(filters) else " AND m.valid_until IS NULL"
            rows = self._db.read(
                f"SELECT m.id, {_SCORE} AS s FROM memories_fts "
                f"JOIN memories m ON m.pk = memories_fts.rowid WHERE memories_fts MATCH ?{current}{tail}",
                (fts_match(user_id, terms),),
            )
        else:
            where, params = filter_sql(filters)
            rows = self._db.read(
                f"SELECT m.id, {_SCORE} AS s FROM memories_fts JOIN memories m ON m.pk = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND m.user_id = ? AND {where}{tail}",
                (fts_match(user_id, terms), user_id, *params),
            )
        return [(str(i), float(s)) for i, s in rows]

    def text_scores(self, user_id: str, terms: Sequence[str], memory_ids: Sequence[str]) -> dict[str, float]:
        if not terms or not memory_ids:
            return {}
        rows = self._db.read_in(
            f"SELECT m.id, {_SCORE} FROM memories_fts JOIN memories m ON m.pk = memories_fts.rowid "
            "WHERE memories_fts MATCH ? AND memories_fts.rowid IN "
            "(SELECT pk FROM memories WHERE +user_id = ? AND id IN ({marks}))",
            memory_ids,
            before=(fts_match(user_id, terms), user_id),
        )
        return {str(i): float(s) for i, s in rows}
