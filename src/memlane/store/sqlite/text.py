"""The FTS5 text index: one entry per memory (its body, the previous turn's words, its user's scope), BM25 search."""

from __future__ import annotations

import builtins
import hashlib
import sqlite3
from collections.abc import Sequence
from typing import ClassVar, Final

from memlane.models import Filters, MemoryItem, MemoryKind
from memlane.store.hot.rows import turn_label
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.text import SQLTextIndex
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.hot_feed import HotScopes
from memlane.store.sqlite.reads import superseded_count
from memlane.store.sqlite.rows import FILTERS, filter_sql, is_empty, only_current

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


def enable_secure_delete(c: sqlite3.Connection) -> bool:
    """Ask FTS5 to remove a deleted row's terms from its index at once (SQLite 3.44+; a setting stored in the index).

    Without it, FTS5 only records a delete marker, and the terms stay in older index segments (unsearchable) until
    the segments are merged. Returns whether this SQLite supports it.
    """
    try:
        c.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1)")
    except sqlite3.Error:
        return False
    return True


def purge_deleted_terms(c: sqlite3.Connection) -> None:
    """Merge the whole full-text index into one segment, dropping the terms of deleted rows (O(index size))."""
    c.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")


def previous_turn(c: sqlite3.Connection, item: MemoryItem) -> str:
    """The text of the turn before ``item`` in its session: indexed beside it, so that an answer ("A sunset.") is
    found by the words of the question it answers ("What did you paint?").
    """
    if item.kind != MemoryKind.MESSAGE or not item.position:
        return ""
    row = c.execute(
        "SELECT text, role, speaker FROM memories WHERE user_id = ? AND session_id IS ? AND position = ? "
        "AND kind = 'message'",
        (item.user_id, item.session_id, item.position - 1),
    ).fetchone()
    # only a reply (another role or speaker) takes it: ``turn_label``
    return str(row[0]) if row and turn_label(row[1], row[2]) != turn_label(item.role, item.speaker) else ""


def turn_of(c: sqlite3.Connection, pk: int) -> tuple[str, str | None, int] | None:
    """(user, session, position) of a row that is a turn of a conversation, else None."""
    row = c.execute(
        "SELECT user_id, session_id, position FROM memories WHERE pk = ? AND kind = 'message' AND position IS NOT NULL",
        (pk,),
    ).fetchone()
    return None if row is None else (str(row[0]), row[1], int(row[2]))


def refresh_next_context(c: sqlite3.Connection, turn: tuple[str, str | None, int] | None) -> None:
    """Rebuild the context of the turn after ``turn`` from the rows as they are now.

    Called in the transaction that changes a turn's text or takes it out of (or back into) the index, so that no
    entry keeps words its neighbour no longer has.
    """
    if turn is None:
        return
    user_id, session_id, position = turn
    turns = "SELECT pk, text, role, speaker FROM memories WHERE user_id = ? AND session_id IS ? AND position = ? "
    turns += "AND kind = 'message'"
    here = c.execute(turns, (user_id, session_id, position)).fetchone()
    for pk, _, role, speaker in c.execute(turns, (user_id, session_id, position + 1)).fetchall():
        reply = here is not None and turn_label(here[2], here[3]) != turn_label(role, speaker)
        c.execute("UPDATE memories_fts SET ctx = ? WHERE rowid = ?", (str(here[1]) if reply else "", pk))


def index_entry(c: sqlite3.Connection, pk: int, item: MemoryItem, body: str, ctx: str | None = None) -> None:
    """Write a memory's entry (``ctx`` defaults to the previous turn's text)."""
    c.execute(
        "INSERT INTO memories_fts (rowid, body, ctx, scope) VALUES (?, ?, ?, ?)",
        (pk, body, previous_turn(c, item) if ctx is None else ctx, scope_token(item.user_id)),
    )


def drop_entry(c: sqlite3.Connection, pk: int) -> None:
    """Remove a memory's entry."""
    c.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))


class SQLiteTextIndex(SQLTextIndex[HotScopes]):
    """BM25 over one user's memories: from the user's read model (``hot_feed``) when the filters are none or
    "current only", else in FTS5, confined to the user by the scope token.
    """

    _db: Database
    _hot: HotScopes
    _filters: ClassVar[FilterSQL] = FILTERS

    def _text_search_sql(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        match = fts_match(user_id, terms)
        cap = -1 if limit is None else int(limit)  # LIMIT -1: no limit
        if is_empty(filters) or only_current(filters):
            # The best matches are ranked inside SQLite from the index alone; only they are joined to their rows.
            # Ties go to the older row. Superseded memories are few: take that many more, then drop them.
            current, extra = "", 0
            if not is_empty(filters):
                current = " WHERE m.valid_until IS NULL"
                extra = 0 if cap < 0 else superseded_count(self._db, user_id)
            rows = self._db.read(
                f"SELECT m.id, r.s FROM (SELECT rowid, {_SCORE} AS s FROM memories_fts WHERE memories_fts MATCH ? "
                f"ORDER BY s DESC, rowid LIMIT ?) r JOIN memories m ON m.pk = r.rowid{current} "
                "ORDER BY r.s DESC, r.rowid LIMIT ?",
                (match, cap if cap < 0 else cap + extra, cap),
            )
        else:
            where, params = filter_sql(filters)
            rows = self._db.read(
                f"SELECT m.id, {_SCORE} AS s FROM memories_fts JOIN memories m ON m.pk = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND m.user_id = ? AND {where} ORDER BY s DESC, m.pk LIMIT ?",
                (match, user_id, *params, cap),
            )
        return [(str(i), float(s)) for i, s in rows]

    def _text_scores_sql(
        self, user_id: str, terms: Sequence[str], memory_ids: Sequence[str], filters: Filters
    ) -> dict[str, float]:
        where, params = filter_sql(filters)
        # ``+rowid`` keeps the id list away from FTS5 (which would re-run the query once per id): the index is
        # walked once and BM25 is computed for the listed rows only.
        rows = self._db.read_in(
            f"SELECT m.id, f.s FROM (SELECT rowid, {_SCORE} AS s FROM memories_fts WHERE memories_fts MATCH ? "
            "AND +rowid IN (SELECT pk FROM memories WHERE +user_id = ? AND id IN ({marks}))) f "
            f"JOIN memories m ON m.pk = f.rowid WHERE {where}",
            memory_ids,
            (fts_match(user_id, terms), user_id),
            params,
        )
        return {str(i): float(s) for i, s in rows}
