"""Re-embedding of the SQLite store beside the live vectors, switched in atomically: SQL over a connection the
caller holds inside a transaction.

New vectors go to ``vectors_next`` (rows cascade away with their memory) under a target named in ``meta``; searches
keep using ``vectors`` until ``switch`` copies the new ones over and records the new model in one transaction.
A reindex that dies part-way leaves the old, consistent state; run again for the same model it resumes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Final

from memlane.models import MemoryItem
from memlane.store.sqlite.rows import COLUMNS, row_to_item

TARGET_KEY: Final = "reindex_target"


def begin(c: sqlite3.Connection, identity: str, dim: int) -> None:
    """Aim the pending vectors at this model: vectors already written for it are kept, any others dropped."""
    target = f"{dim}:{identity}"
    row = c.execute("SELECT value FROM meta WHERE key = ?", (TARGET_KEY,)).fetchone()
    if row is None or row[0] != target:
        c.execute("DELETE FROM vectors_next")
        c.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (TARGET_KEY, target)
        )


def pending(c: sqlite3.Connection, after: str | None, limit: int) -> list[MemoryItem]:
    """Memories stored after memory ``after`` (from the first when ``None`` or gone) that have no new vector yet,
    in storage order.
    """
    rows = c.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.pk > coalesce((SELECT pk FROM memories WHERE id = ?), 0) "
        "AND NOT EXISTS (SELECT 1 FROM vectors_next n WHERE n.pk = m.pk) ORDER BY m.pk LIMIT ?",
        (after, limit),
    ).fetchall()
    return [row_to_item(r) for r in rows]


def stage(c: sqlite3.Connection, vectors: Mapping[str, bytes]) -> None:
    """Write new vectors (by memory id) beside the live ones (a memory deleted meanwhile is skipped)."""
    c.executemany(
        "INSERT INTO vectors_next (pk, vec) SELECT pk, ? FROM memories WHERE id = ? "
        "ON CONFLICT(pk) DO UPDATE SET vec = excluded.vec",
        [(blob, memory_id) for memory_id, blob in vectors.items()],
    )


def switch(c: sqlite3.Connection, identity: str, dim: int) -> bool:
    """Make the new vectors live and record the new model, if every memory has one; ``False`` (nothing changed)
    when memories written meanwhile still lack theirs.
    """
    missing = c.execute(
        "SELECT 1 FROM memories m WHERE NOT EXISTS (SELECT 1 FROM vectors_next n WHERE n.pk = m.pk) LIMIT 1"
    ).fetchone()
    if missing is not None:
        return False
    c.execute("UPDATE vectors SET vec = (SELECT n.vec FROM vectors_next n WHERE n.pk = vectors.pk)")
    c.execute("DELETE FROM vectors_next")
    c.execute("DELETE FROM passages")  # the old model's: documents are passaged again (Memory.reindex)
    c.execute("DELETE FROM meta WHERE key = ?", (TARGET_KEY,))
    for key, value in (("embedder", identity), ("dim", str(dim))):
        c.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))
    return True
