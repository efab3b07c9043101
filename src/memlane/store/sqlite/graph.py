"""The knowledge graph in SQLite: the shared graph (``memlane.store.sql.graph``); a curation moves the user's scope
version, so that the caches of the user's data see it.
"""

from __future__ import annotations

import sqlite3
from typing import ClassVar, Final

from memlane.store.sql.dialect import SQLITE, Connection, Dialect
from memlane.store.sql.graph import RelationWriter, SQLGraph
from memlane.store.sqlite.db import Database

write_relations: Final = RelationWriter(SQLITE).write_relations


class SQLiteGraph(SQLGraph[Database]):
    """Graph reads (slices for the graph dimension, relations, entity nodes) and entity merge and split."""

    _dialect: ClassVar[Dialect] = SQLITE

    def _curated(self, c: Connection, user_id: str) -> None:
        assert isinstance(c, sqlite3.Connection)
        self._db.bump(c, user_id)
