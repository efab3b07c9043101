"""Reading memory rows, once for both SQL stores: by id, by content hash, by filters, in order, and counts."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from memlane.errors import NotFoundError
from memlane.models import Filters, MemoryItem, MemoryKind
from memlane.store.sql.dialect import Dialect, Reader
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.rows import row_to_item

R = TypeVar("R", bound=Reader)


class SQLReads(Generic[R]):
    """Memory rows by id, hash and filters; every query of one user's rows names the user (mixed into a backend's
    store, which names its dialect and the columns ``row_to_item`` reads).
    """

    _db: R
    _dialect: ClassVar[Dialect]
    _filters: ClassVar[FilterSQL]
    #: ``COLUMNS`` of ``memories m`` as the backend selects them for ``row_to_item``.
    _selected: ClassVar[str]

    def _read(self, sql: str, params: Sequence[Any] = (), scope: str | None = None) -> builtins.list[Any]:
        return self._dialect.read(self._db, sql, params, scope=scope)

    def get(self, user_id: str, memory_id: str) -> MemoryItem:
        user = self._dialect.unindexed("m.user_id")
        rows = self._read(
            f"SELECT {self._selected} FROM memories m WHERE {user} = ? AND m.id = ?", (user_id, memory_id), user_id
        )
        if not rows:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_item(rows[0])

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]:
        d = self._dialect
        out: dict[str, MemoryItem] = {}
        for chunk in d.chunks(memory_ids):
            among, params = d.in_list("m.id", chunk)
            sql = f"SELECT {self._selected} FROM memories m WHERE {d.unindexed('m.user_id')} = ? AND {among}"
            for row in self._read(sql, (user_id, *params), user_id):
                item = row_to_item(row)
                out[item.id] = item
        return out

    def list(self, user_id: str, filters: Filters, limit: int, offset: int) -> builtins.list[MemoryItem]:
        where, params = self._filters.filter_sql(filters)
        rows = self._read(
            f"SELECT {self._selected} FROM memories m WHERE m.user_id = ? AND {where} "
            "ORDER BY m.ts, m.pk LIMIT ? OFFSET ?",
            (user_id, *params, limit, offset),
            user_id,
        )
        return [row_to_item(r) for r in rows]

    def find_hashes(self, user_id: str, hashes: Sequence[str]) -> dict[str, MemoryItem]:
        """The memory of this user stored under each content hash (if several: the earliest still valid)."""
        d = self._dialect
        out: dict[str, MemoryItem] = {}
        for chunk in d.chunks(hashes):
            among, params = d.in_list("m.content_hash", chunk)
            rows = self._read(
                f"SELECT {self._selected} FROM memories m WHERE m.user_id = ? AND {among} "
                "ORDER BY m.valid_until IS NULL, m.pk DESC",
                (user_id, *params),
                user_id,
            )
            for row in rows:
                item = row_to_item(row)
                out[item.content_hash] = item
        return out

    def count_kinds(self, user_id: str, kinds: Sequence[MemoryKind]) -> int:
        """How many memories of these kinds this user holds (superseded ones included)."""
        if not kinds:
            return 0
        among, params = self._dialect.in_list("kind", [k.value for k in kinds])
        rows = self._read(f"SELECT count(*) FROM memories WHERE user_id = ? AND {among}", (user_id, *params), user_id)
        return int(rows[0][0])

    def iter_items(self, user_id: str | None = None) -> Iterator[MemoryItem]:
        """Every memory (of one user, or all) in insertion order, read in batches paged by row key."""
        last = 0
        scope, params = ("m.user_id = ? AND ", [user_id]) if user_id is not None else ("", [])
        while True:
            rows = self._read(
                f"SELECT m.pk, {self._selected} FROM memories m WHERE {scope}m.pk > ? ORDER BY m.pk LIMIT 500",
                (*params, last),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield from (row_to_item(r[1:]) for r in rows)

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._read("SELECT count(*) FROM memories")[0][0])
        return int(self._read("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,))[0][0])

    def count_by_kind(self, user_id: str | None = None) -> dict[str, int]:
        if user_id is None:
            rows = self._read("SELECT kind, count(*) FROM memories GROUP BY kind")
        else:
            rows = self._read("SELECT kind, count(*) FROM memories WHERE user_id = ? GROUP BY kind", (user_id,))
        return {str(k): int(n) for k, n in rows}

    def user_count(self) -> int:
        return int(self._read("SELECT count(DISTINCT user_id) FROM memories")[0][0])
