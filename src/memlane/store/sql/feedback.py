"""The feedback log, once for both SQL stores: which returned memories were useful for which queries."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from memlane.errors import NotFoundError
from memlane.store.records import Feedback
from memlane.store.sql.dialect import Dialect, Reader
from memlane.store.sql.rows import to_micros


class Writer(Reader, Protocol):
    """A backend database's transactions (confined to the user ``scope`` where the server can) and reads."""

    def atomic(self, scope: str | None = None) -> AbstractContextManager[Any]: ...


W = TypeVar("W", bound=Writer)


class SQLFeedback(Generic[W]):
    """Judgements recorded by ``Memory.feedback``; the latest word on a (user, query, memory) wins."""

    _db: W
    _dialect: ClassVar[Dialect]

    def add_feedback(self, user_id: str, query: str, memory_id: str, useful: bool, at: datetime) -> None:
        d = self._dialect
        with self._db.atomic(user_id) as c:
            row = d.run(
                c, f"SELECT 1 FROM memories WHERE {d.unindexed('user_id')} = ? AND id = ?", (user_id, memory_id)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
            d.run(
                c,
                "INSERT INTO feedback (user_id, query, memory_id, useful, at) VALUES (?, ?, ?, ?, ?)",
                (user_id, query, memory_id, d.boolean(useful), to_micros(at)),
            )

    def feedback(self, user_id: str | None = None) -> builtins.list[Feedback]:
        scope, params = ("WHERE user_id = ? ", (user_id,)) if user_id is not None else ("", ())
        rows = self._dialect.read(
            self._db, f"SELECT user_id, query, memory_id, useful FROM feedback {scope}ORDER BY seq", params
        )
        latest: dict[tuple[str, str, str], bool] = {}
        for uid, query, mid, useful in rows:
            latest[(str(uid), str(query), str(mid))] = bool(useful)
        return [Feedback(u, q, m, v) for (u, q, m), v in latest.items()]
