"""SQLite's change feed for the per-user read models (``memlane.store.hot``): the ``fact_log`` table and its floor.

Triggers append ``(seq, user_id, pk)`` to ``fact_log`` whenever a memory is inserted or deleted, or a column the read
path uses changes (text, session, position, kind, times, importance, labels, validity), in the transaction of the
write, whoever wrote it. A model remembers the last ``seq`` it applied and replays the newer entries before it
answers (one indexed range query, skipped while ``Database.generation`` has not moved). SQLite has one writer at a
time, so entries become visible in ``seq`` order. The log is pruned once it is long; a model older than the floor is
rebuilt from the tables.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence

from memlane.store.hot import cache
from memlane.store.hot.cache import Changes
from memlane.store.hot.rows import NO_ENTITIES, HotRow, row_of_columns, turn_label
from memlane.store.sqlite.db import Database, translate

#: The log of a user is pruned (up to what this process applied) once it holds this many entries more than the floor.
PRUNE_AFTER = 20_000
#: Rows a background snapshot converts between two calls of its ``pause``.
_BLOCK = 512

_COLUMNS = (
    "m.pk, m.id, m.kind, m.session_id, m.position, m.ts, m.importance, m.event_time, m.event_end, m.category, "
    "m.intent, m.valid_until IS NULL, coalesce(f.body, m.text), m.text, m.role, m.speaker"
)
_FROM = "memories m LEFT JOIN memories_fts f ON f.rowid = m.pk"


def hot_row(r: Sequence[object], entities: dict[int, dict[str, bool]]) -> HotRow:
    """A model row from the selected columns (``_COLUMNS``'s order) and the entity links by row key."""
    return row_of_columns(
        r,
        entities.get(int(r[0]), NO_ENTITIES),  # type: ignore[call-overload]
        turn_label(r[14], r[15]),
    )


def entity_links(rows: Iterable[Sequence[object]]) -> dict[int, dict[str, bool]]:
    """``(pk, entity, said_by)`` rows as entity links by row key."""
    out: dict[int, dict[str, bool]] = {}
    for pk, entity, said_by in rows:
        out.setdefault(int(pk), {})[str(entity)] = bool(said_by)  # type: ignore[call-overload]
    return out


class SQLiteHotFeed:
    """``fact_log`` of one SQLite connection, as ``memlane.store.hot.cache.HotScopes`` reads it."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def lock(self) -> threading.RLock:
        return self._db.lock  # the connection's: a model is read and replayed under the lock its reads take anyway

    @property
    def writable(self) -> bool:
        return not self._db.read_only

    @property
    def prune_after(self) -> int:
        return PRUNE_AFTER

    def in_transaction(self) -> bool:
        return self._db.conn.in_transaction

    def generation(self, user_id: str) -> Hashable:
        return self._db.generation()

    def _floor(self, user_id: str) -> int:
        rows = self._db.read("SELECT seq FROM fact_log_floor WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    def changes(self, user_id: str, since: int) -> Changes | None:
        floor = self._floor(user_id)
        if floor > since:
            return None
        logged = self._db.read(
            "SELECT seq, pk FROM fact_log WHERE user_id = ? AND seq > ? ORDER BY seq", (user_id, since)
        )
        erased = self.erasures()
        if not logged:
            return Changes((), since, floor, erased)
        return Changes([int(pk) for _, pk in logged], int(logged[-1][0]), floor, erased)

    def erasures(self) -> int:
        rows = self._db.read("SELECT value FROM meta WHERE key = 'erasures'")
        return int(rows[0][0]) if rows else 0

    def count(self, user_id: str) -> int:
        return int(self._db.read("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,))[0][0])

    def rows(self, user_id: str, keys: Sequence[int]) -> list[HotRow]:
        rows = self._db.read_in(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.pk IN ({{marks}}) AND m.user_id = ?", keys, after=(user_id,)
        )
        ents = entity_links(
            self._db.read_in("SELECT pk, entity, said_by FROM memory_entities WHERE pk IN ({marks})", keys)
        )
        return [hot_row(r, ents) for r in rows]

    def snapshot(self, user_id: str) -> tuple[int, list[HotRow]]:
        with self._db.reading() as c:
            return _snapshot(c, user_id)

    @property
    def reads_apart(self) -> bool:
        return self._db.path != ":memory:"

    def snapshot_apart(self, user_id: str, pause: Callable[[], None]) -> tuple[int, int, list[HotRow]]:
        """Read through a connection of its own, in one read transaction (WAL: the writer is not held up)."""
        try:
            conn = self._db.reader()
            try:
                conn.execute("BEGIN")
                erased = conn.execute("SELECT value FROM meta WHERE key = 'erasures'").fetchall()
                head, rows = _snapshot(conn, user_id, pause)
                conn.execute("COMMIT")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise translate(exc, self._db.path) from exc
        return int(erased[0][0]) if erased else 0, head, rows

    def prune(self, user_id: str, upto: int) -> None:
        with self._db.atomic() as c:
            c.execute("DELETE FROM fact_log WHERE user_id = ? AND seq <= ?", (user_id, upto))
            c.execute(
                "INSERT INTO fact_log_floor VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET seq = excluded.seq "
                "WHERE excluded.seq > fact_log_floor.seq",
                (user_id, upto),
            )


def _snapshot(c: sqlite3.Connection, user_id: str, pause: Callable[[], None] | None = None) -> tuple[int, list[HotRow]]:
    """The mark and every row of the user; ``pause`` (if any) is called between blocks of rows."""
    rows = c.execute(
        "SELECT max(seq), (SELECT seq FROM fact_log_floor WHERE user_id = ?1) FROM fact_log WHERE user_id = ?1",
        (user_id,),
    ).fetchall()
    head = max(int(rows[0][0] or 0), int(rows[0][1] or 0))  # first: rows read after it may be newer
    ents = entity_links(c.execute("SELECT pk, entity, said_by FROM memory_entities WHERE user_id = ?", (user_id,)))
    cursor = c.execute(f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.user_id = ? ORDER BY m.pk", (user_id,))
    if pause is None:
        return head, [hot_row(r, ents) for r in cursor.fetchall()]
    out: list[HotRow] = []
    while block := cursor.fetchmany(_BLOCK):
        pause()
        out.extend(hot_row(r, ents) for r in block)
    return head, out


class HotScopes(cache.HotScopes):
    """The read models of one SQLite database (``memlane.store.hot.cache.HotScopes`` over its ``fact_log``)."""

    def __init__(self, db: Database) -> None:
        super().__init__(SQLiteHotFeed(db))
