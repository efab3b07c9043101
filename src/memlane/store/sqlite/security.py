"""Injection flags and sealed PII originals of memories, in the SQLite store."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import Final

from memlane.models import FlaggedMemory, InjectionFlag
from memlane.store.records import SealedOriginal
from memlane.store.sql.rows import flag_from_row
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import COLUMNS, from_micros, row_to_item, to_micros

_QUALIFIED: Final = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))


class SQLiteSecurity:
    """The ``memory_flags`` and ``pii_originals`` tables; rows go with their memory (triggers, and ``delete_user``)."""

    _db: Database

    def put_flags(self, user_id: str, flags: Sequence[InjectionFlag]) -> None:
        if not flags:
            return
        with self._db.atomic() as c:
            c.executemany(
                "INSERT INTO memory_flags (user_id, memory_id, score, reasons, detector, flagged_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(user_id, memory_id) DO UPDATE SET score = excluded.score, "
                "reasons = excluded.reasons, detector = excluded.detector, flagged_at = excluded.flagged_at",
                [
                    (user_id, f.memory_id, f.score, json.dumps(f.reasons), f.detector, to_micros(f.flagged_at))
                    for f in flags
                ],
            )

    def clear_flags(self, user_id: str, memory_ids: Sequence[str]) -> None:
        with self._db.atomic() as c:
            c.executemany(
                "DELETE FROM memory_flags WHERE user_id = ? AND memory_id = ?", [(user_id, m) for m in memory_ids]
            )

    def flags(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, InjectionFlag]:
        rows = self._db.read_in(
            "SELECT memory_id, score, reasons, detector, flagged_at FROM memory_flags "
            "WHERE user_id = ? AND memory_id IN ({marks})",
            memory_ids,
            before=(user_id,),
        )
        return {str(r[0]): flag_from_row(r) for r in rows}

    def flagged(self, user_id: str | None, limit: int, offset: int) -> builtins.list[FlaggedMemory]:
        scope, params = ("AND f.user_id = ? ", (user_id,)) if user_id is not None else ("", ())
        rows = self._db.read(
            f"SELECT f.memory_id, f.score, f.reasons, f.detector, f.flagged_at, {_QUALIFIED} FROM memory_flags f "
            f"JOIN memories m ON m.id = f.memory_id AND m.user_id = f.user_id WHERE 1 {scope}"
            "ORDER BY f.flagged_at DESC, f.memory_id LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [FlaggedMemory(memory=row_to_item(r[5:]), flag=flag_from_row(r[:5])) for r in rows]

    def put_originals(self, user_id: str, originals: Sequence[SealedOriginal]) -> None:
        if not originals:
            return
        with self._db.atomic() as c:
            c.executemany(
                "INSERT INTO pii_originals (user_id, memory_id, sealed, kinds, at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(user_id, memory_id) DO UPDATE SET sealed = excluded.sealed, kinds = excluded.kinds, "
                "at = excluded.at",
                [(user_id, o.memory_id, o.sealed, json.dumps(list(o.kinds)), to_micros(o.at)) for o in originals],
            )

    def drop_originals(self, user_id: str, memory_ids: Sequence[str]) -> None:
        with self._db.atomic() as c:
            c.executemany(
                "DELETE FROM pii_originals WHERE user_id = ? AND memory_id = ?", [(user_id, m) for m in memory_ids]
            )

    def original(self, user_id: str, memory_id: str) -> SealedOriginal | None:
        rows = self._db.read(
            "SELECT memory_id, sealed, kinds, at FROM pii_originals WHERE user_id = ? AND memory_id = ?",
            (user_id, memory_id),
        )
        if not rows:
            return None
        r = rows[0]
        return SealedOriginal(str(r[0]), bytes(r[1]), tuple(json.loads(r[2])), from_micros(int(r[3])))

    def count_originals(self, user_id: str | None = None) -> int:
        scope, params = ("WHERE user_id = ?", (user_id,)) if user_id is not None else ("", ())
        return int(self._db.read(f"SELECT count(*) FROM pii_originals {scope}", params)[0][0])
