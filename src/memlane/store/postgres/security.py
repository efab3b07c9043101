"""Injection flags and sealed PII originals of memories, in the PostgreSQL store."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence

from memlane.models import FlaggedMemory, InjectionFlag
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import SELECTED
from memlane.store.records import SealedOriginal
from memlane.store.sql.rows import flag_from_row, from_micros, row_to_item, to_micros


class PostgresSecurity:
    """The ``memory_flags`` and ``pii_originals`` tables; rows go with their memory (triggers, and ``delete_user``)."""

    _db: Database

    def put_flags(self, user_id: str, flags: Sequence[InjectionFlag]) -> None:
        if not flags:
            return
        with self._db.atomic(user_id) as c, c.cursor() as cur:
            cur.executemany(
                b"INSERT INTO memory_flags (user_id, memory_id, score, reasons, detector, flagged_at) "
                b"VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (user_id, memory_id) DO UPDATE SET "
                b"score = excluded.score, reasons = excluded.reasons, detector = excluded.detector, "
                b"flagged_at = excluded.flagged_at",
                [
                    (user_id, f.memory_id, f.score, json.dumps(f.reasons), f.detector, to_micros(f.flagged_at))
                    for f in flags
                ],
            )

    def clear_flags(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._db.atomic(user_id) as c:
            c.execute(
                b"DELETE FROM memory_flags WHERE user_id = %s AND memory_id = ANY(%s)", (user_id, list(memory_ids))
            )

    def flags(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, InjectionFlag]:
        if not memory_ids:
            return {}
        rows = self._db.read(
            "SELECT memory_id, score, reasons, detector, flagged_at FROM memory_flags "
            "WHERE user_id = %s AND memory_id = ANY(%s)",
            (user_id, list(dict.fromkeys(memory_ids))),
            scope=user_id,
        )
        return {str(r[0]): flag_from_row(r) for r in rows}

    def flagged(self, user_id: str | None, limit: int, offset: int) -> builtins.list[FlaggedMemory]:
        scope, params = ("AND f.user_id = %s ", [user_id]) if user_id is not None else ("", [])
        rows = self._db.read(
            f"SELECT f.memory_id, f.score, f.reasons, f.detector, f.flagged_at, {SELECTED} FROM memory_flags f "
            f"JOIN memories m ON m.id = f.memory_id AND m.user_id = f.user_id WHERE true {scope}"
            'ORDER BY f.flagged_at DESC, f.memory_id COLLATE "C" LIMIT %s OFFSET %s',
            (*params, limit, offset),
            scope=user_id,
        )
        return [FlaggedMemory(memory=row_to_item(r[5:]), flag=flag_from_row(r[:5])) for r in rows]

    def put_originals(self, user_id: str, originals: Sequence[SealedOriginal]) -> None:
        if not originals:
            return
        with self._db.atomic(user_id) as c, c.cursor() as cur:
            cur.executemany(
                b"INSERT INTO pii_originals (user_id, memory_id, sealed, kinds, at) VALUES (%s, %s, %s, %s, %s) "
                b"ON CONFLICT (user_id, memory_id) DO UPDATE SET sealed = excluded.sealed, kinds = excluded.kinds, "
                b"at = excluded.at",
                [(user_id, o.memory_id, o.sealed, json.dumps(list(o.kinds)), to_micros(o.at)) for o in originals],
            )

    def drop_originals(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._db.atomic(user_id) as c:
            c.execute(
                b"DELETE FROM pii_originals WHERE user_id = %s AND memory_id = ANY(%s)", (user_id, list(memory_ids))
            )

    def original(self, user_id: str, memory_id: str) -> SealedOriginal | None:
        rows = self._db.read(
            "SELECT memory_id, sealed, kinds, at FROM pii_originals WHERE user_id = %s AND memory_id = %s",
            (user_id, memory_id),
            scope=user_id,
        )
        if not rows:
            return None
        r = rows[0]
        return SealedOriginal(str(r[0]), bytes(r[1]), tuple(json.loads(r[2])), from_micros(int(r[3])))

    def count_originals(self, user_id: str | None = None) -> int:
        scope, params = ("WHERE user_id = %s", (user_id,)) if user_id is not None else ("", ())
        return int(self._db.read(f"SELECT count(*) FROM pii_originals {scope}", params, scope=user_id)[0][0])
