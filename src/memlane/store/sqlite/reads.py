"""Reading memory rows: by id, by content hash, by filters, in order, and counts."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence

from memlane.errors import NotFoundError
from memlane.models import Filters, MemoryItem, MemoryKind
from memlane.store.sqlite.db import Database, marks
from memlane.store.sqlite.rows import COLUMNS, SELECT_ITEM, filter_sql, row_to_item


def superseded(db: Database, user_id: str) -> tuple[builtins.list[int], set[str]]:
    """Row keys and ids of this user's superseded memories (a partial index keeps this cheap)."""
    rows = db.read("SELECT pk, id FROM memories WHERE user_id = ? AND valid_until IS NOT NULL", (user_id,))
    return [int(r[0]) for r in rows], {str(r[1]) for r in rows}


def superseded_count(db: Database, user_id: str) -> int:
    """How many of this user's memories are superseded."""
    return int(db.read("SELECT count(*) FROM memories WHERE user_id = ? AND valid_until IS NOT NULL", (user_id,))[0][0])


def iter_rows(db: Database, user_id: str | None, batch: int) -> Iterator[builtins.list[MemoryItem]]:
    """Every memory (of one user, or all) in insertion order, in batches (paged by row key)."""
    last = 0
    scope, params = ("m.user_id = ? AND ", [user_id]) if user_id is not None else ("", [])
    while True:
        rows = db.read(
            f"SELECT m.pk, {COLUMNS} FROM memories m WHERE {scope}m.pk > ? ORDER BY m.pk LIMIT ?",
            (*params, last, batch),
        )
        if not rows:
            return
        last = int(rows[-1][0])
        yield [row_to_item(r[1:]) for r in rows]


class SQLiteReads:
    """Memory rows by id, hash and filters."""

    _db: Database

    def get(self, user_id: str, memory_id: str) -> MemoryItem:
        rows = self._db.read(f"{SELECT_ITEM} WHERE +m.user_id = ? AND m.id = ?", (user_id, memory_id))
        if not rows:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_item(rows[0])

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]:
        rows = self._db.read_in(f"{SELECT_ITEM} WHERE +m.user_id = ? AND m.id IN ({{marks}})", memory_ids, (user_id,))
        items = (row_to_item(r) for r in rows)
        return {it.id: it for it in items}

    def list(self, user_id: str, filters: Filters, limit: int, offset: int) -> builtins.list[MemoryItem]:
        where, params = filter_sql(filters)
        rows = self._db.read(
            f"{SELECT_ITEM} WHERE m.user_id = ? AND {where} ORDER BY m.ts, m.pk LIMIT ? OFFSET ?",
            (user_id, *params, limit, offset),
        )
        return [row_to_item(r) for r in rows]

    def find_hashes(self, user_id: str, hashes: Sequence[str]) -> dict[str, MemoryItem]:
        """The memory of this user stored under each content hash (if several: the earliest still valid)."""
        out: dict[str, MemoryItem] = {}
        rows = self._db.read_in(
            f"{SELECT_ITEM} WHERE m.user_id = ? AND m.content_hash IN ({{marks}}) "
            "ORDER BY m.valid_until IS NULL, m.pk DESC",
            hashes,
            (user_id,),
        )
        for row in rows:
            item = row_to_item(row)
            out[item.content_hash] = item
        return out

    def count_kinds(self, user_id: str, kinds: Sequence[MemoryKind]) -> int:
        """How many memories of these kinds this user holds (superseded ones included)."""
        if not kinds:
            return 0
        rows = self._db.read(
            f"SELECT count(*) FROM memories WHERE user_id = ? AND kind IN ({marks(len(kinds))})",
            (user_id, *[k.value for k in kinds]),
        )
        return int(rows[0][0])

    def iter_items(self, user_id: str | None = None) -> Iterator[MemoryItem]:
        for batch in iter_rows(self._db, user_id, 500):
            yield from batch

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._db.read("SELECT count(*) FROM memories")[0][0])
        return int(self._db.read("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,))[0][0])

    def count_by_kind(self, user_id: str | None = None) -> dict[str, int]:
        if user_id is None:
            rows = self._db.read("SELECT kind, count(*) FROM memories GROUP BY kind")
        else:
            rows = self._db.read("SELECT kind, count(*) FROM memories WHERE user_id = ? GROUP BY kind", (user_id,))
        return {str(k): int(n) for k, n in rows}

    def user_count(self) -> int:
        return int(self._db.read("SELECT count(DISTINCT user_id) FROM memories")[0][0])
