"""The feedback log: which returned memories were useful for which queries."""

from __future__ import annotations

import builtins
from datetime import datetime

from memlane.errors import NotFoundError
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import run
from memlane.store.records import Feedback
from memlane.store.sqlite.rows import to_micros


class PostgresFeedback:
    """Judgements recorded by ``Memory.feedback``; the latest word on a (user, query, memory) wins."""

    _db: Database

    def add_feedback(self, user_id: str, query: str, memory_id: str, useful: bool, at: datetime) -> None:
        with self._db.atomic(user_id) as c:
            row = run(c, "SELECT 1 FROM memories WHERE user_id = %s AND id = %s", (user_id, memory_id)).fetchone()
            if row is None:
                raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
            run(
                c,
                "INSERT INTO feedback (user_id, query, memory_id, useful, at) VALUES (%s, %s, %s, %s, %s)",
                (user_id, query, memory_id, useful, to_micros(at)),
            )

    def feedback(self, user_id: str | None = None) -> builtins.list[Feedback]:
        scope, params = ("WHERE user_id = %s ", (user_id,)) if user_id is not None else ("", ())
        rows = self._db.read(f"SELECT user_id, query, memory_id, useful FROM feedback {scope}ORDER BY seq", params)
        latest: dict[tuple[str, str, str], bool] = {}
        for uid, query, mid, useful in rows:
            latest[(str(uid), str(query), str(mid))] = bool(useful)
        return [Feedback(u, q, m, v) for (u, q, m), v in latest.items()]
