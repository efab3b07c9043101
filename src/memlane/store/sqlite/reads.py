"""Reading memory rows in SQLite: the shared reads (``memlane.store.sql.reads``), and the superseded rows the
indexes leave out.
"""

from __future__ import annotations

import builtins
from typing import ClassVar

from memlane.store.sql.dialect import SQLITE, Dialect
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.reads import SQLReads
from memlane.store.sql.rows import COLUMNS
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import FILTERS


def superseded(db: Database, user_id: str) -> tuple[builtins.list[int], set[str]]:
    """Row keys and ids of this user's superseded memories (a partial index keeps this cheap)."""
    rows = db.read("SELECT pk, id FROM memories WHERE user_id = ? AND valid_until IS NOT NULL", (user_id,))
    return [int(r[0]) for r in rows], {str(r[1]) for r in rows}


def superseded_count(db: Database, user_id: str) -> int:
    """How many of this user's memories are superseded."""
    return int(db.read("SELECT count(*) FROM memories WHERE user_id = ? AND valid_until IS NOT NULL", (user_id,))[0][0])


class SQLiteReads(SQLReads[Database]):
    """Memory rows by id, hash and filters."""

    _dialect: ClassVar[Dialect] = SQLITE
    _filters: ClassVar[FilterSQL] = FILTERS
    _selected: ClassVar[str] = COLUMNS
