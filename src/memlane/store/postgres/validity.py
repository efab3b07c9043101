"""Which stored messages stated a claim that a later memory superseded: written with the supersession, read per pool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from memlane.models import MemoryItem, MemoryKind
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import run
from memlane.store.records import Contradiction
from memlane.store.sql.rows import from_micros, to_micros


def mark_contradicted(c: psycopg.Connection[Any], item: MemoryItem) -> int:
    """Inside the caller's transaction: link the messages a just-superseded typed memory was distilled from to the
    memory that superseded it. Returns how many links were written.
    """
    if item.kind is MemoryKind.MESSAGE or not item.superseded_by or item.valid_until is None:
        return 0
    sources = [s.memory_id for s in item.sources]
    if not sources:
        return 0
    cur = run(
        c,
        "INSERT INTO contradictions (user_id, memory_id, superseded, contradicted_by, since) "
        "SELECT m.user_id, m.id, %s, %s, %s FROM memories m WHERE m.user_id = %s AND m.id = ANY(%s) AND m.kind = %s "
        "ON CONFLICT (user_id, memory_id, superseded) DO UPDATE SET contradicted_by = excluded.contradicted_by, "
        "since = excluded.since",
        (
            item.id,
            item.superseded_by,
            to_micros(item.valid_until),
            item.user_id,
            sources,
            MemoryKind.MESSAGE.value,
        ),
    )
    return int(cur.rowcount)


def forget_links(c: psycopg.Connection[Any], user_id: str, memory_id: str) -> None:
    """Inside the caller's transaction: drop every link that names a deleted memory, on either side."""
    run(
        c,
        "DELETE FROM contradictions WHERE user_id = %s AND (memory_id = %s OR superseded = %s OR contradicted_by = %s)",
        (user_id, memory_id, memory_id, memory_id),
    )


class PostgresValidity:
    """The ``ValidityIndex`` capability over the ``contradictions`` table."""

    _db: Database

    def contradicted(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Contradiction]:
        if not memory_ids:
            return {}
        out: dict[str, Contradiction] = {}
        rows = self._db.read(
            "SELECT memory_id, superseded, contradicted_by, since FROM contradictions "
            "WHERE user_id = %s AND memory_id = ANY(%s) ORDER BY since, superseded",
            (user_id, list(memory_ids)),
            scope=user_id,
        )
        for memory_id, old, new, since in rows:
            # the earliest supersession is when the message stopped being current
            out.setdefault(str(memory_id), Contradiction(str(memory_id), str(old), str(new), from_micros(int(since))))
        return out
