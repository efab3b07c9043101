"""Documents' passages in the SQLite store: written in the memory's transaction, read as one matrix per user."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

import numpy as np

from memlane.models import MemoryItem, MemoryKind
from memlane.store.passages import PassageMatrix, PassageVectors
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import COLUMNS, row_to_item


def write_passage_rows(c: sqlite3.Connection, pk: int, user_id: str, passages: PassageVectors) -> None:
    """Store one document's passages (replacing any it had), inside the caller's transaction."""
    vecs = np.ascontiguousarray(passages.vectors, dtype=np.float32)
    if len(vecs) != len(passages.spans):
        raise ValueError("one vector per passage")
    c.execute("DELETE FROM passages WHERE pk = ?", (pk,))
    c.executemany(
        "INSERT INTO passages (pk, user_id, ordinal, start, stop, vec) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (pk, user_id, i, s.start, s.end, v.tobytes())
            for i, (s, v) in enumerate(zip(passages.spans, vecs, strict=True))
        ],
    )


def empty_matrix(version: object, dim: int) -> PassageMatrix:
    """A user's matrix when they hold no passage."""
    none = np.zeros(0, dtype=np.int64)
    return PassageMatrix(version, [], none, none, none, none, none, np.zeros((0, dim), dtype=np.float32))


class SQLitePassages:
    """The ``PassageIndex`` capability over the ``passages`` table."""

    _db: Database

    def passage_version(self, user_id: str) -> int:
        rows = self._db.read("SELECT token FROM passage_versions WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    def passage_matrix(self, user_id: str) -> PassageMatrix:
        with self._db.reading() as c:
            found = c.execute("SELECT token FROM passage_versions WHERE user_id = ?", (user_id,)).fetchone()
            version = int(found[0]) if found else 0
            rows = c.execute(
                "SELECT m.id, p.ordinal, p.start, p.stop, p.vec FROM passages p JOIN memories m ON m.pk = p.pk "
                "WHERE p.user_id = ? ORDER BY p.pk, p.ordinal",
                (user_id,),
            ).fetchall()
        if not rows:
            return empty_matrix(version, 0)
        ids = [str(r[0]) for r in rows]
        ordinals = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        starts = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        ends = np.fromiter((r[3] for r in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        firsts = np.flatnonzero(ordinals == 0).astype(np.int64)
        counts = np.diff(np.append(firsts, len(rows))).astype(np.int64)
        return PassageMatrix(version, ids, ordinals, starts, ends, firsts, counts, vectors)

    def unpassaged(self, user_id: str | None, limit: int) -> list[MemoryItem]:
        where = "m.kind = ? AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.pk = m.pk)"
        params: tuple[object, ...] = (MemoryKind.DOCUMENT.value,)
        if user_id is not None:
            where += " AND m.user_id = ?"
            params += (user_id,)
        rows = self._db.read(f"SELECT {COLUMNS} FROM memories m WHERE {where} ORDER BY m.pk LIMIT ?", (*params, limit))
        return [row_to_item(r) for r in rows]

    def write_passages(self, user_id: str, passages: Mapping[str, PassageVectors]) -> None:
        if not passages:
            return
        with self._db.atomic() as c:
            for memory_id, pv in passages.items():
                row = c.execute(
                    "SELECT pk FROM memories WHERE +user_id = ? AND id = ? AND kind = ?",
                    (user_id, memory_id, MemoryKind.DOCUMENT.value),
                ).fetchone()
                if row is not None:
                    write_passage_rows(c, int(row[0]), user_id, pv)


def write_new_passages(
    c: sqlite3.Connection,
    pks: Sequence[int],
    items: Sequence[MemoryItem],
    passages: Mapping[str, PassageVectors] | None,
) -> None:
    """The passages of the documents just inserted (``pks[i]`` is the row of ``items[i]``)."""
    if not passages:
        return
    for pk, item in zip(pks, items, strict=True):
        found = passages.get(item.id)
        if found is not None:
            write_passage_rows(c, pk, item.user_id, found)
