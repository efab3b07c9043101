"""The default embedded backend: one SQLite file with FTS5 and an in-process vector matrix."""

from memlane.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
