"""PostgreSQL's change feed for the per-user read models (``memlane.store.hot``): ``fact_log`` read by transaction id.

Triggers (migration ``0006_fact_log``) append ``(seq, user_id, pk, xid)`` to ``fact_log`` whenever a memory is
inserted or deleted, a column the read path uses changes, or its entity links change, in the transaction of the
write, whoever wrote it (any process, any machine).

Why transaction ids and not ``seq``: a sequence hands out numbers when rows are written, not when they commit, so a
later ``seq`` can become visible before an earlier one (two writers, the first commits last). A model that
remembered "applied up to seq S" would skip the earlier entry for good. Instead a model remembers the ``xmin`` of
the snapshot it last read the log with: every transaction below it had ended (committed or rolled back) then, so any
entry it has not seen was written by a transaction with an id at or above it (one still running then, or a later
one). A replay reads the entries of transactions ``>= xmin`` (one indexed range query that also returns the new
``xmin`` and the floor); entries seen before come back while an older transaction is still running, and replaying
them again is harmless (a replay re-reads the rows as they are now).

When to look: a model is checked when this process has committed a write since (any ``Database``: ``COMMITS``), or
``FRESH_FOR`` seconds after its last check, so the several lookups of one search cost one check; another process's
write is seen within ``FRESH_FOR``. The log is pruned once it spans ``PRUNE_AFTER`` transactions
(keeping the newest half of that span, which other processes' models may not have read yet); a model older than the floor is rebuilt from the tables.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from types import MappingProxyType

from memlane.store.hot import cache
from memlane.store.hot.cache import Changes
from memlane.store.hot.rows import NO_ENTITIES, HotRow, row_of_columns, turn_label
from memlane.store.postgres.db import COMMITS, Database

#: The log of a user is pruned once it spans this many transaction ids past the floor.
PRUNE_AFTER = 20_000
#: Seconds a checked model is used without checking the log again, unless this process wrote since.
FRESH_FOR = 0.02

_XMIN = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
_COLUMNS = (
    "m.pk, m.id, m.kind, m.session_id, m.position, m.ts, m.importance, m.event_time, m.event_end, m.category, "
    "m.intent, m.valid_until IS NULL, m.body, m.text, (SELECT array_agg(e.entity || CASE WHEN e.said_by THEN '+' "
    "ELSE '-' END) FROM memory_entities e WHERE e.pk = m.pk), m.role, m.speaker"
)


def _row(r: Sequence[object]) -> HotRow:
    links = r[14]
    entities = (
        MappingProxyType({str(e)[:-1]: str(e).endswith("+") for e in links})  # type: ignore[attr-defined]
        if links
        else NO_ENTITIES
    )
    return row_of_columns(r, entities, turn_label(r[15], r[16]))


_ERASURES = "SELECT coalesce((SELECT value::bigint FROM meta WHERE key = 'erasures'), 0)"


class PostgresHotFeed:
    """``fact_log`` of one PostgreSQL database, as ``memlane.store.hot.cache.HotScopes`` reads it."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.RLock()
        self._checked: dict[str, tuple[int, float]] = {}  # user -> (commits, time) of the last token handed out

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def writable(self) -> bool:
        return True

    @property
    def prune_after(self) -> int:
        return PRUNE_AFTER

    def in_transaction(self) -> bool:
        return self._db.in_transaction()

    def generation(self, user_id: str) -> Hashable:
        commits, now = COMMITS.count, time.monotonic()
        last = self._checked.get(user_id)
        if last is not None and last[0] == commits and now - last[1] < FRESH_FOR:
            return last
        token = self._checked[user_id] = (commits, now)
        return token

    def changes(self, user_id: str, since: int) -> Changes | None:
        (xmin, floor, oldest, keys, erased), *_ = self._db.read(
            f"SELECT {_XMIN}, coalesce((SELECT xid FROM fact_log_floor WHERE user_id = %(u)s), 0), "
            "(SELECT min(xid) FROM fact_log WHERE user_id = %(u)s), "
            "ARRAY(SELECT pk FROM fact_log WHERE user_id = %(u)s AND xid >= %(since)s ORDER BY seq), "
            f"({_ERASURES})",
            {"u": user_id, "since": since},
            scope=user_id,
        )
        if int(floor) > since:
            return None
        upto = max(since, int(xmin))
        return Changes([int(k) for k in keys], upto, upto if oldest is None else int(oldest), int(erased))

    def erasures(self) -> int:
        (erased,), *_ = self._db.read(f"SELECT ({_ERASURES})")
        return int(erased)

    def count(self, user_id: str) -> int:
        (n,), *_ = self._db.read("SELECT count(*) FROM memories WHERE user_id = %s", (user_id,), scope=user_id)
        return int(n)

    def rows(self, user_id: str, keys: Sequence[int]) -> list[HotRow]:
        found = self._db.read(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.user_id = %s AND m.pk = ANY(%s)",
            (user_id, list(keys)),
            scope=user_id,
        )
        return [_row(r) for r in found]

    def snapshot(self, user_id: str) -> tuple[int, list[HotRow]]:
        # The mark first, in its own statement: the rows read after it may be newer, and replaying them is harmless.
        (xmin,), *_ = self._db.read(f"SELECT {_XMIN}")
        found = self._db.read(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.user_id = %s ORDER BY m.pk", (user_id,), scope=user_id
        )
        return int(xmin), [_row(r) for r in found]

    @property
    def reads_apart(self) -> bool:
        return True  # every read takes a connection of the pool

    def snapshot_apart(self, user_id: str, pause: Callable[[], None]) -> tuple[int, int, list[HotRow]]:
        del pause  # rows are converted as psycopg reads them
        erasures = self.erasures()  # first: an erasure after it is seen at the next check
        return (erasures, *self.snapshot(user_id))

    def prune(self, user_id: str, upto: int) -> None:
        # Half the span is kept: the models of other processes, a little behind this one, go on replaying.
        upto -= PRUNE_AFTER // 2
        with self._db.atomic(user_id, unseen=True) as c:
            c.execute(b"DELETE FROM fact_log WHERE user_id = %s AND xid < %s", (user_id, upto))
            c.execute(
                b"INSERT INTO fact_log_floor AS f VALUES (%s, %s) ON CONFLICT (user_id) DO UPDATE "
                b"SET xid = excluded.xid WHERE excluded.xid > f.xid",
                (user_id, upto),
            )


class HotScopes(cache.HotScopes):
    """The read models of one PostgreSQL database (``memlane.store.hot.cache.HotScopes`` over its ``fact_log``)."""

    def __init__(self, db: Database) -> None:
        super().__init__(PostgresHotFeed(db))
