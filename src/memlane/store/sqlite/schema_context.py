"""The SQLite store's data migration of the previous-turn column (``memlane.store.sql.turn_context``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Final

from memlane.store.sql.dialect import SQLITE
from memlane.store.sql.turn_context import ContextColumn, recompute_contexts

# The full-text entries (``memories_fts``, rowid = the memory's pk), walked in the memories' key order.
_FTS_CONTEXT: Final = ContextColumn(
    rows="memories m CROSS JOIN memories_fts f ON f.rowid = m.pk", value="f.ctx", table="memories_fts", key="rowid"
)


def _reply_context(c: sqlite3.Connection) -> None:
    recompute_contexts(c, SQLITE, _FTS_CONTEXT)


# A turn's entry holds its previous turn's words only as a reply (another role or speaker; ``turn_label``): entries
# written before hold any previous message's. No statement of its own: its step (``DATA_STEPS``) rewrites them.
CONTEXT_MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (("0020_reply_context", ""),)

#: Migrations computed in Python, run after their SQL in the same transaction.
DATA_STEPS: Final[Mapping[str, Callable[[sqlite3.Connection], None]]] = {"0020_reply_context": _reply_context}
