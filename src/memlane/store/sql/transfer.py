"""What a whole-store copy reads and writes, once for both SQL stores (``StoreTransfer``): history, graph relations,
injection flags and sealed originals. Each backend adds its users and index entries (``user_ids``,
``stored_entries``), which it keeps in its own way.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import ClassVar, Generic, TypeVar

from memlane.errors import ValidationError
from memlane.models import HistoryEntry, InjectionFlag
from memlane.store.records import SealedOriginal, StoredRelation
from memlane.store.sql.dialect import Dialect
from memlane.store.sql.feedback import Writer
from memlane.store.sql.history import HistoryLog
from memlane.store.sql.rows import flag_from_row, from_micros, to_micros

W = TypeVar("W", bound=Writer)


class SQLTransfer(Generic[W]):
    """The shared part of the ``StoreTransfer`` capability (mixed into a backend's store)."""

    _db: W
    _dialect: ClassVar[Dialect]
    _history_log: ClassVar[HistoryLog]

    def history_ids(self, user_id: str) -> builtins.list[str]:
        rows = self._dialect.read(
            self._db,
            "SELECT memory_id FROM history WHERE user_id = ? GROUP BY memory_id ORDER BY min(seq)",
            (user_id,),
            scope=user_id,
        )
        return [str(r[0]) for r in rows]

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        with self._db.atomic(user_id) as c:
            self._dialect.run(c, "DELETE FROM history WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
            self._history_log.log_events(
                c, [(user_id, memory_id, e.event, e.at, e.old_text, e.new_text, e.changes) for e in entries]
            )

    def stored_relations(self, user_id: str) -> builtins.list[StoredRelation]:
        rows = self._dialect.read(
            self._db,
            "SELECT r.id, r.subject, r.predicate, r.object, r.subject_type, r.object_type, r.valid_from, "
            f"r.valid_until, r.superseded_by, {self._dialect.joined('m.id')} FROM relations r "
            "LEFT JOIN relation_sources s ON s.relation = r.id LEFT JOIN memories m ON m.pk = s.pk "
            "WHERE r.user_id = ? GROUP BY r.id ORDER BY r.id",
            (user_id,),
            scope=user_id,
        )
        return [
            StoredRelation(
                int(rid),
                str(subj),
                str(pred),
                str(obj),
                str(st),
                str(ot),
                from_micros(int(since)),
                None if until is None else from_micros(int(until)),
                None if by is None else int(by),
                tuple(sorted(str(ids).split("\x1f"))) if ids else (),
            )
            for rid, subj, pred, obj, st, ot, since, until, by, ids in rows
        ]

    def put_relations(self, user_id: str, relations: Sequence[StoredRelation]) -> int:
        d = self._dialect
        # where rows carry their user (row-level security), a relation's sources do too
        source = (
            "INSERT INTO relation_sources (relation, pk, user_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
            if d.confines
            else "INSERT INTO relation_sources (relation, pk) VALUES (?, ?) ON CONFLICT DO NOTHING"
        )
        with self._db.atomic(user_id) as c:
            if d.run(c, "SELECT 1 FROM relations WHERE user_id = ? LIMIT 1", (user_id,)).fetchone():
                raise ValidationError(f"user {user_id!r} already has graph relations in this store")
            pks: dict[str, int] = {}
            for chunk in d.chunks(sorted({mid for r in relations for mid in r.sources})):
                among, params = d.in_list("id", chunk)
                found = d.run(
                    c, f"SELECT id, pk FROM memories WHERE {d.unindexed('user_id')} = ? AND {among}", (user_id, *params)
                ).fetchall()
                pks.update((str(mid), int(pk)) for mid, pk in found)
            ids: dict[int, int] = {}
            for r in relations:
                sources = [pks[m] for m in r.sources if m in pks]
                if not sources:
                    continue
                ids[r.id] = d.insert_id(
                    c,
                    "INSERT INTO relations (user_id, subject, predicate, object, subject_type, object_type, "
                    "valid_from, valid_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        user_id,
                        r.subject,
                        r.predicate,
                        r.object,
                        r.subject_type,
                        r.object_type,
                        to_micros(r.valid_from),
                        None if r.valid_until is None else to_micros(r.valid_until),
                    ),
                )
                d.run_many(c, source, [(ids[r.id], pk, user_id) if d.confines else (ids[r.id], pk) for pk in sources])
            d.run_many(
                c,
                "UPDATE relations SET superseded_by = ? WHERE id = ?",
                [
                    (ids[r.superseded_by], ids[r.id])
                    for r in relations
                    if r.id in ids and r.superseded_by is not None and r.superseded_by in ids
                ],
            )
        return len(ids)

    def injection_flags(self, user_id: str) -> builtins.list[InjectionFlag]:
        rows = self._dialect.read(
            self._db,
            "SELECT memory_id, score, reasons, detector, flagged_at FROM memory_flags WHERE user_id = ? "
            "ORDER BY memory_id",
            (user_id,),
            scope=user_id,
        )
        return [flag_from_row(r) for r in rows]

    def sealed_originals(self, user_id: str) -> builtins.list[SealedOriginal]:
        rows = self._dialect.read(
            self._db,
            "SELECT memory_id, sealed, kinds, at FROM pii_originals WHERE user_id = ? ORDER BY memory_id",
            (user_id,),
            scope=user_id,
        )
        return [
            SealedOriginal(str(mid), bytes(sealed), tuple(json.loads(kinds)), from_micros(int(at)))
            for mid, sealed, kinds, at in rows
        ]
