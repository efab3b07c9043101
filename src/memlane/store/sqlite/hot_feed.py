"""Each user's in-memory read model (``memlane.store.hot``) kept current from SQLite's ``fact_log``.

Triggers append ``(seq, user_id, pk)`` to ``fact_log`` whenever a memory is inserted or deleted, or a column the read
path uses changes (text, session, position, kind, times, importance, labels, validity), in the transaction of the
write, whoever wrote it. A model remembers the last ``seq`` it applied and replays the newer entries before it
answers (one indexed range query, skipped while ``Database.generation`` has not moved). The log is pruned once it is
long; a model older than the floor is rebuilt from the tables.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from memlane.store.hot.scope import HotRow, HotScope
from memlane.store.sqlite.db import Database

#: The log of a user is pruned (up to what this process applied) once it holds this many entries more than the floor.
PRUNE_AFTER = 20_000

_COLUMNS = (
    "m.pk, m.id, m.kind, m.session_id, m.position, m.ts, m.importance, m.event_time, m.event_end, m.category, "
    "m.intent, m.valid_until IS NULL, coalesce(f.body, m.text), m.text"
)
_FROM = "memories m LEFT JOIN memories_fts f ON f.rowid = m.pk"


def _row(r: Sequence[object], entities: dict[int, dict[str, bool]]) -> HotRow:
    return HotRow(
        int(r[0]),  # type: ignore[call-overload]
        str(r[1]),
        str(r[2]),
        None if r[3] is None else str(r[3]),
        None if r[4] is None else int(r[4]),  # type: ignore[call-overload]
        int(r[5]),  # type: ignore[call-overload]
        float(r[6]),  # type: ignore[arg-type]
        None if r[7] is None else int(r[7]),  # type: ignore[call-overload]
        None if r[8] is None else int(r[8]),  # type: ignore[call-overload]
        None if r[9] is None else str(r[9]),
        None if r[10] is None else str(r[10]),
        bool(r[11]),
        str(r[12]),
        str(r[13]),
        entities.get(int(r[0]), {}),  # type: ignore[call-overload]
    )


def _entities(rows: Sequence[Sequence[object]]) -> dict[int, dict[str, bool]]:
    out: dict[int, dict[str, bool]] = {}
    for pk, entity, said_by in rows:
        out.setdefault(int(pk), {})[str(entity)] = bool(said_by)  # type: ignore[call-overload]
    return out


class HotScopes:
    """The read models of a database, one per user searched, current with its log."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = db.lock  # the connection's: a model is read and replayed under the lock its reads take anyway
        self._open: dict[str, HotScope] = {}
        self._synced: dict[str, tuple[int, int]] = {}

    def _floor(self, user_id: str) -> int:
        rows = self._db.read("SELECT seq FROM fact_log_floor WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    def _head(self, user_id: str) -> int:
        rows = self._db.read("SELECT max(seq) FROM fact_log WHERE user_id = ?", (user_id,))
        return max(int(rows[0][0] or 0), self._floor(user_id))

    @contextmanager
    def using(self, user_id: str) -> Iterator[HotScope | None]:
        """The user's model, current with the database, held for the block; ``None`` inside a transaction of this
        connection (its writes may still roll back: the caller reads the tables instead).
        """
        with self._lock:
            yield None if self._db.conn.in_transaction else self.get(user_id)

    def get(self, user_id: str) -> HotScope:
        """The user's model, current with the database (built on first use). Call under ``lock``."""
        with self._lock:
            at = self._db.generation()
            held = self._open.get(user_id)
            if held is not None and self._synced.get(user_id) == at:
                return held
            if held is not None and self._floor(user_id) <= held.applied_seq:
                self._replay(user_id, held)
            else:
                held = self._build(user_id)
                self._open[user_id] = held
            self._synced[user_id] = at
            return held

    def _build(self, user_id: str) -> HotScope:
        head = self._head(user_id)  # first: rows read after it may be newer, and replaying them again is harmless
        scope = HotScope(head)
        rows = self._db.read(f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.user_id = ? ORDER BY m.pk", (user_id,))
        ents = _entities(self._db.read("SELECT pk, entity, said_by FROM memory_entities WHERE user_id = ?", (user_id,)))
        scope.apply(_row(r, ents) for r in rows)
        return scope

    def _replay(self, user_id: str, scope: HotScope) -> None:
        logged = self._db.read(
            "SELECT seq, pk FROM fact_log WHERE user_id = ? AND seq > ? ORDER BY seq", (user_id, scope.applied_seq)
        )
        if not logged:
            return
        pks = list(dict.fromkeys(int(pk) for _, pk in logged))
        rows = self._db.read_in(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.pk IN ({{marks}}) AND m.user_id = ?", pks, after=(user_id,)
        )
        ents = _entities(self._db.read_in("SELECT pk, entity, said_by FROM memory_entities WHERE pk IN ({marks})", pks))
        present = [_row(r, ents) for r in rows]
        found = {r.pk for r in present}
        scope.apply(present, removed=[pk for pk in pks if pk not in found])
        scope.applied_seq = int(logged[-1][0])
        if scope.applied_seq - self._floor(user_id) > PRUNE_AFTER and not self._db.read_only:
            self._prune(user_id, scope.applied_seq)

    def _prune(self, user_id: str, upto: int) -> None:
        with self._db.atomic() as c:
            c.execute("DELETE FROM fact_log WHERE user_id = ? AND seq <= ?", (user_id, upto))
            c.execute(
                "INSERT INTO fact_log_floor VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET seq = excluded.seq "
                "WHERE excluded.seq > fact_log_floor.seq",
                (user_id, upto),
            )

    def forget(self, user_id: str) -> None:
        """After a user's data was deleted: drop their model."""
        with self._lock:
            self._open.pop(user_id, None)
            self._synced.pop(user_id, None)

    def drop(self) -> None:
        with self._lock:
            self._open.clear()
            self._synced.clear()
