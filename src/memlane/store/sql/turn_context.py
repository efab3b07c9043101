"""The previous-turn column of the text index recomputed for every stored row by the current rule (a data migration).

A turn indexes its previous turn's words only as a reply: the two differ in role or speaker (``turn_label``).
Rows written before that rule hold any previous message's text, even a neighbouring document's by the same author;
the migration walks the rows by key in bounded batches, inside the migration's transaction, and rewrites the
entries that differ. Texts stay in the database: a batch reads keys, labels and two comparisons, and an entry
that takes its previous turn's words copies them with a subquery.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from memlane.store.hot.rows import turn_label
from memlane.store.sql.dialect import Connection, Dialect

log = logging.getLogger(__name__)

#: Rows read per batch: memory is bounded by this, whatever the store's size.
BATCH: Final = 2000

# The previous turn of ``m`` as the write path reads it (``previous_turn``): a message of the same user and session
# one position earlier; the first by key when several share the position. Spelled as two lookups (no session, a
# session) so that both databases answer each from the (user_id, session_id, position) index.
_PREVIOUS: Final = """CASE
    WHEN m.kind <> 'message' OR m.position IS NULL OR m.position < 1 THEN NULL
    WHEN m.session_id IS NULL THEN (SELECT min(q.pk) FROM memories q WHERE q.user_id = m.user_id
        AND q.session_id IS NULL AND q.position = m.position - 1 AND q.kind = 'message')
    ELSE (SELECT min(q.pk) FROM memories q WHERE q.user_id = m.user_id
        AND q.session_id = m.session_id AND q.position = m.position - 1 AND q.kind = 'message')
END"""


@dataclass(frozen=True)
class ContextColumn:
    """Where a backend keeps a memory's previous-turn words."""

    rows: str  # the memories ``m`` joined to their text entries (a row without an entry has nothing to fix)
    value: str  # the column, as ``rows`` names it
    table: str  # the table an UPDATE writes
    key: str  # that table's column holding the memory's ``pk``


def recompute_contexts(c: Connection, dialect: Dialect, column: ContextColumn, batch: int | None = None) -> int:
    """Give every text entry the context the current rule gives it, in the caller's transaction, ``batch`` rows
    at a time (``BATCH`` by default); the number of entries rewritten.
    """
    size = BATCH if batch is None else batch
    # The previous turn's fields as lookups by key (never a join, which a planner may answer with a scan of the
    # whole table for every batch).
    walk = (
        "SELECT t.pk, t.role, t.speaker, t.prev, (SELECT p.role FROM memories p WHERE p.pk = t.prev), "
        "(SELECT p.speaker FROM memories p WHERE p.pk = t.prev), t.ctx = '', "
        "t.ctx = coalesce((SELECT p.text FROM memories p WHERE p.pk = t.prev), '') "
        f"FROM (SELECT m.pk, m.role, m.speaker, {column.value} AS ctx, {_PREVIOUS} AS prev FROM {column.rows} "
        "WHERE m.pk > ? ORDER BY m.pk LIMIT ?) t ORDER BY t.pk"
    )
    copy = f"UPDATE {column.table} SET ctx = (SELECT text FROM memories WHERE pk = ?) WHERE {column.key} = ?"
    after, changed, seen = -1, 0, 0
    while True:
        rows = dialect.run(c, walk, (after, size)).fetchall()
        if not rows:
            break
        clear: list[int] = []
        take: list[tuple[int, int]] = []
        for pk, role, speaker, prev, prev_role, prev_speaker, empty, same in rows:
            reply = prev is not None and turn_label(prev_role, prev_speaker) != turn_label(role, speaker)
            if reply and not same:
                take.append((int(prev), int(pk)))
            elif not reply and not empty:
                clear.append(int(pk))
        for chunk in dialect.chunks(clear):
            where, params = dialect.in_list(column.key, chunk)
            dialect.run(c, f"UPDATE {column.table} SET ctx = '' WHERE {where}", params)
        dialect.run_many(c, copy, take)
        changed += len(clear) + len(take)
        seen += len(rows)
        after = int(rows[-1][0])
    log.info("previous-turn context: %d of %d text entries rewritten", changed, seen)
    return changed
