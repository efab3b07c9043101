"""What a whole-store copy reads and writes in SQLite (``StoreTransfer``): users, index entries, history, graph
relations, injection flags and sealed originals.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence

import numpy as np

from memlane.errors import ValidationError
from memlane.models import HistoryEntry, InjectionFlag
from memlane.store.records import SealedOriginal, StoredEntry, StoredRelation
from memlane.store.sqlite.db import Database
from memlane.store.sqlite.rows import from_micros, to_micros
from memlane.store.sqlite.security import flag_from_row


class SQLiteTransfer:
    """The ``StoreTransfer`` capability over the shared ``Database``."""

    _db: Database

    def user_ids(self) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT user_id FROM (SELECT user_id, min(pk) AS o FROM memories GROUP BY user_id "
            "UNION ALL SELECT user_id, 1e18 + min(pk) FROM archive GROUP BY user_id "
            "UNION ALL SELECT user_id, 2e18 + min(seq) FROM history GROUP BY user_id "
            "UNION ALL SELECT user_id, 3e18 + min(seq) FROM feedback GROUP BY user_id "
            "UNION ALL SELECT user_id, 4e18 + min(seq) FROM jobs GROUP BY user_id "
            "UNION ALL SELECT user_id, 5e18 FROM memory_flags GROUP BY user_id "
            "UNION ALL SELECT user_id, 5e18 FROM pii_originals GROUP BY user_id) GROUP BY user_id ORDER BY min(o), user_id"
        )
        return [str(r[0]) for r in rows]

    def stored_entries(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, StoredEntry]:
        live = self._db.read_in(
            "SELECT m.id, f.body, v.vec FROM memories m JOIN memories_fts f ON f.rowid = m.pk "
            "JOIN vectors v ON v.pk = m.pk WHERE +m.user_id = ? AND m.id IN ({marks})",
            memory_ids,
            before=(user_id,),
        )
        archived = self._db.read_in(
            "SELECT id, body, vec FROM archive WHERE user_id = ? AND id IN ({marks})", memory_ids, before=(user_id,)
        )
        return {
            str(mid): StoredEntry(str(body), np.frombuffer(vec, dtype=np.float32).copy())
            for mid, body, vec in (*archived, *live)
        }

    def history_ids(self, user_id: str) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT memory_id FROM history WHERE user_id = ? GROUP BY memory_id ORDER BY min(seq)", (user_id,)
        )
        return [str(r[0]) for r in rows]

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        with self._db.atomic() as c:
            c.execute("DELETE FROM history WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
            c.executemany(
                "INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        memory_id,
                        user_id,
                        e.event.value,
                        to_micros(e.at),
                        e.old_text,
                        e.new_text,
                        json.dumps(e.changes, default=str),
                    )
                    for e in entries
                ],
            )

    def stored_relations(self, user_id: str) -> builtins.list[StoredRelation]:
        rows = self._db.read(
            "SELECT r.id, r.subject, r.predicate, r.object, r.subject_type, r.object_type, r.valid_from, "
            "r.valid_until, r.superseded_by, group_concat(m.id, char(31)) FROM relations r "
            "LEFT JOIN relation_sources s ON s.relation = r.id LEFT JOIN memories m ON m.pk = s.pk "
            "WHERE r.user_id = ? GROUP BY r.id ORDER BY r.id",
            (user_id,),
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
        with self._db.atomic() as c:
            if c.execute("SELECT 1 FROM relations WHERE user_id = ? LIMIT 1", (user_id,)).fetchone():
                raise ValidationError(f"user {user_id!r} already has graph relations in this store")
            wanted = sorted({mid for r in relations for mid in r.sources})
            pks: dict[str, int] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                found = c.execute(
                    f"SELECT id, pk FROM memories WHERE +user_id = ? AND id IN ({', '.join('?' * len(chunk))})",
                    (user_id, *chunk),
                ).fetchall()
                pks.update((str(mid), int(pk)) for mid, pk in found)
            ids: dict[int, int] = {}
            for r in relations:
                sources = [pks[m] for m in r.sources if m in pks]
                if not sources:
                    continue
                cur = c.execute(
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
                ids[r.id] = int(cur.lastrowid or 0)
                c.executemany(
                    "INSERT OR IGNORE INTO relation_sources (relation, pk) VALUES (?, ?)",
                    [(ids[r.id], pk) for pk in sources],
                )
            c.executemany(
                "UPDATE relations SET superseded_by = ? WHERE id = ?",
                [
                    (ids[r.superseded_by], ids[r.id])
                    for r in relations
                    if r.id in ids and r.superseded_by is not None and r.superseded_by in ids
                ],
            )
        return len(ids)

    def injection_flags(self, user_id: str) -> builtins.list[InjectionFlag]:
        rows = self._db.read(
            "SELECT memory_id, score, reasons, detector, flagged_at FROM memory_flags WHERE user_id = ? "
            "ORDER BY memory_id",
            (user_id,),
        )
        return [flag_from_row(r) for r in rows]

    def sealed_originals(self, user_id: str) -> builtins.list[SealedOriginal]:
        rows = self._db.read(
            "SELECT memory_id, sealed, kinds, at FROM pii_originals WHERE user_id = ? ORDER BY memory_id", (user_id,)
        )
        return [
            SealedOriginal(str(mid), bytes(sealed), tuple(json.loads(kinds)), from_micros(int(at)))
            for mid, sealed, kinds, at in rows
        ]
