"""Documents' passages in the PostgreSQL store: written in the memory's transaction, read as one matrix per user."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg

import memlane.store.postgres.hot_feed as hot_feed
from memlane.models import MemoryItem, MemoryKind
from memlane.store.passages import PassageMatrix, PassageVectors
from memlane.store.postgres.db import COMMITS, Database
from memlane.store.postgres.rows import SELECT_ITEM, run
from memlane.store.sql.rows import row_to_item

_INSERT = (
    b"INSERT INTO passages (pk, user_id, ordinal, start, stop, vec) "
    b"SELECT pk, user_id, %s, %s, %s, %s FROM memories WHERE id = %s AND user_id = %s"
)


def write_passage_rows(
    c: psycopg.Connection[Any], owners: Sequence[tuple[str, str]], passages: Mapping[str, PassageVectors]
) -> None:
    """Store the passages of these documents ((memory id, user id) pairs; replacing any they had), inside the
    caller's transaction; a row is found by the memory's id, so this runs in an add's pipeline after the inserts.
    """
    rows: list[tuple[Any, ...]] = []
    for memory_id, user_id in owners:
        found = passages.get(memory_id)
        if found is None:
            continue
        vecs = np.ascontiguousarray(found.vectors, dtype=np.float32)
        if len(vecs) != len(found.spans):
            raise ValueError("one vector per passage")
        run(c, "DELETE FROM passages WHERE pk = (SELECT pk FROM memories WHERE id = %s)", (memory_id,))
        rows += [
            (i, s.start, s.end, v.tobytes(), memory_id, user_id)
            for i, (s, v) in enumerate(zip(found.spans, vecs, strict=True))
        ]
    if rows:
        with c.cursor() as cur:
            cur.executemany(_INSERT, rows)


class PostgresPassages:
    """The ``PassageIndex`` capability over the ``passages`` table."""

    _db: Database

    def passage_version(self, user_id: str) -> int:
        # As the read model checks its log (hot_feed.FRESH_FOR): asked again only after this process committed, or
        # that long after the last check, so another process's write is seen within it.
        checks: dict[str, tuple[int, float, int]] = self.__dict__.setdefault("_passage_checks", {})
        commits, now = COMMITS.count, time.monotonic()
        last = checks.get(user_id)
        if last is not None and last[0] == commits and now - last[1] < hot_feed.FRESH_FOR:
            return last[2]
        rows = self._db.read("SELECT token FROM passage_versions WHERE user_id = %s", (user_id,), scope=user_id)
        token = int(rows[0][0]) if rows else 0
        if len(checks) > 4096:
            checks.clear()
        checks[user_id] = (commits, now, token)
        return token

    def passage_matrix(self, user_id: str) -> PassageMatrix:
        with self._db.reading(user_id) as c:
            found = run(c, "SELECT token FROM passage_versions WHERE user_id = %s", (user_id,)).fetchone()
            version = int(found[0]) if found else 0
            rows = run(
                c,
                "SELECT m.id, p.ordinal, p.start, p.stop, p.vec FROM passages p JOIN memories m ON m.pk = p.pk "
                "WHERE p.user_id = %s ORDER BY p.pk, p.ordinal",
                (user_id,),
            ).fetchall()
        if not rows:
            none = np.zeros(0, dtype=np.int64)
            return PassageMatrix(version, [], none, none, none, none, none, np.zeros((0, 0), dtype=np.float32))
        ordinals = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        firsts = np.flatnonzero(ordinals == 0).astype(np.int64)
        return PassageMatrix(
            version,
            [str(r[0]) for r in rows],
            ordinals,
            np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows)),
            np.fromiter((r[3] for r in rows), dtype=np.int64, count=len(rows)),
            firsts,
            np.diff(np.append(firsts, len(rows))).astype(np.int64),
            np.frombuffer(b"".join(bytes(r[4]) for r in rows), dtype=np.float32).reshape(len(rows), -1),
        )

    def unpassaged(self, user_id: str | None, limit: int) -> list[MemoryItem]:
        where = "m.kind = %s AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.pk = m.pk)"
        params: tuple[object, ...] = (MemoryKind.DOCUMENT.value,)
        if user_id is not None:
            where += " AND m.user_id = %s"
            params += (user_id,)
        rows = self._db.read(f"{SELECT_ITEM} WHERE {where} ORDER BY m.pk LIMIT %s", (*params, limit), scope=user_id)
        return [row_to_item(r) for r in rows]

    def write_passages(self, user_id: str, passages: Mapping[str, PassageVectors]) -> None:
        if not passages:
            return
        with self._db.atomic(user_id) as c:
            ids = [
                str(r[0])
                for r in run(
                    c,
                    "SELECT id FROM memories WHERE user_id = %s AND id = ANY(%s) AND kind = %s",
                    (user_id, list(passages), MemoryKind.DOCUMENT.value),
                ).fetchall()
            ]
            write_passage_rows(c, [(i, user_id) for i in ids], passages)
