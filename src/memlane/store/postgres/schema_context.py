"""The PostgreSQL store's data migration of the previous-turn column (``memlane.store.sql.turn_context``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import psycopg

from memlane.store.sql.dialect import POSTGRES
from memlane.store.sql.turn_context import ContextColumn, recompute_contexts

# ``memories.ctx``: its generated ``tsv`` and ``doclen`` follow, and the text statistics' trigger counts the change.
_ROW_CONTEXT: Final = ContextColumn(rows="memories m", value="m.ctx", table="memories", key="pk")


def _reply_context(c: psycopg.Connection[Any]) -> None:
    recompute_contexts(c, POSTGRES, _ROW_CONTEXT)


# A turn's entry holds its previous turn's words only as a reply (another role or speaker; ``turn_label``): rows
# written before hold any previous message's. No statement of its own: its step (``DATA_STEPS``) rewrites them.
# The second: an add compared speakers with SQL's lower() rather than casefold, so a turn of "STRASSE" after one of
# "Straße" (one speaker) took its words; the same step rewrites the entries that rule gave.
CONTEXT_MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    ("0013_reply_context", ""),
    ("0014_reply_context_casefold", ""),
)

#: Migrations computed in Python, run after their SQL in the same transaction.
DATA_STEPS: Final[Mapping[str, Callable[[psycopg.Connection[Any]], None]]] = {
    "0013_reply_context": _reply_context,
    "0014_reply_context_casefold": _reply_context,
}
