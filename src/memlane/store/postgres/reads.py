"""Reading memory rows: by id, by content hash, by filters, in order, and counts."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence

from memlane.errors import NotFoundError
from memlane.models import Filters, MemoryItem, MemoryKind
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import SELECT_ITEM, SELECTED, filter_sql
from memlane.store.sqlite.rows import row_to_item


class PostgresReads:
    """Memory rows by id, hash and filters; every query names the user."""

    _db: Database

    def get(self, user_id: str, memory_id: str) -> MemoryItem:
        rows = self._db.read(f"{SELECT_ITEM} WHERE m.user_id = %s AND m.id = %s", (user_id, memory_id), scope=user_id)
        if not rows:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_item(rows[0])

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]:
        if not memory_ids:
            return {}
        rows = self._db.read(
            f"{SELECT_ITEM} WHERE m.user_id = %s AND m.id = ANY(%s)", (user_id, list(memory_ids)), scope=user_id
        )
        items = (row_to_item(r) for r in rows)
        return {it.id: it for it in items}

    def list(self, user_id: str, filters: Filters, limit: int, offset: int) -> builtins.list[MemoryItem]:
        where, params = filter_sql(filters)
        rows = self._db.read(
            f"{SELECT_ITEM} WHERE m.user_id = %s AND {where} ORDER BY m.ts, m.pk LIMIT %s OFFSET %s",
            (user_id, *params, limit, offset),
            scope=user_id,
        )
        return [row_to_item(r) for r in rows]

    def find_hashes(self, user_id: str, hashes: Sequence[str]) -> dict[str, MemoryItem]:
        """The memory of this user stored under each content hash (if several: the earliest still valid)."""
        if not hashes:
            return {}
        out: dict[str, MemoryItem] = {}
        rows = self._db.read(
            f"{SELECT_ITEM} WHERE m.user_id = %s AND m.content_hash = ANY(%s) "
            "ORDER BY m.valid_until IS NULL, m.pk DESC",
            (user_id, list(hashes)),
            scope=user_id,
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
            "SELECT count(*) FROM memories WHERE user_id = %s AND kind = ANY(%s)",
            (user_id, [k.value for k in kinds]),
            scope=user_id,
        )
        return int(rows[0][0])

    def iter_items(self, user_id: str | None = None) -> Iterator[MemoryItem]:
        last = 0
        scope, params = ("m.user_id = %s AND ", [user_id]) if user_id is not None else ("", [])
        while True:
            rows = self._db.read(
                f"SELECT m.pk, {SELECTED} FROM memories m WHERE {scope}m.pk > %s ORDER BY m.pk LIMIT 500",
                (*params, last),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield from (row_to_item(r[1:]) for r in rows)

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._db.read("SELECT count(*) FROM memories")[0][0])
        return int(self._db.read("SELECT count(*) FROM memories WHERE user_id = %s", (user_id,))[0][0])

    def count_by_kind(self, user_id: str | None = None) -> dict[str, int]:
        if user_id is None:
            rows = self._db.read("SELECT kind, count(*) FROM memories GROUP BY kind")
        else:
            rows = self._db.read("SELECT kind, count(*) FROM memories WHERE user_id = %s GROUP BY kind", (user_id,))
        return {str(k): int(n) for k, n in rows}

    def user_count(self) -> int:
        return int(self._db.read("SELECT count(DISTINCT user_id) FROM memories")[0][0])
