"""What a whole-store copy reads and writes in PostgreSQL (``StoreTransfer``): users, index entries, history, graph
relations, injection flags and sealed originals.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence

from memlane.errors import ValidationError
from memlane.models import HistoryEntry, InjectionFlag
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import as_array, run
from memlane.store.postgres.security import flag_from_row
from memlane.store.records import SealedOriginal, StoredEntry, StoredRelation
from memlane.store.sqlite.rows import from_micros, to_micros


class PostgresTransfer:
    """The ``StoreTransfer`` capability over the shared ``Database``."""

    _db: Database

    def user_ids(self) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT user_id FROM (SELECT user_id, 0 AS t, min(pk) AS o FROM memories GROUP BY user_id "
            "UNION ALL SELECT user_id, 1, min(pk) FROM archive GROUP BY user_id "
            "UNION ALL SELECT user_id, 2, min(seq) FROM history GROUP BY user_id "
            "UNION ALL SELECT user_id, 3, min(seq) FROM feedback GROUP BY user_id "
            "UNION ALL SELECT user_id, 4, min(seq) FROM jobs GROUP BY user_id "
            "UNION ALL SELECT user_id, 5, 0 FROM memory_flags GROUP BY user_id "
            "UNION ALL SELECT user_id, 5, 0 FROM pii_originals GROUP BY user_id) u "
            "GROUP BY user_id ORDER BY min(t::numeric * 1e19 + o), user_id"
        )
        return [str(r[0]) for r in rows]

    def stored_entries(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, StoredEntry]:
        if not memory_ids:
            return {}
        ids = list(dict.fromkeys(memory_ids))
        with self._db.reading(user_id) as c:
            archived = run(
                c, "SELECT id, body, vec FROM archive WHERE user_id = %s AND id = ANY(%s)", (user_id, ids)
            ).fetchall()
            live = run(
                c, "SELECT id, body, vec FROM memories WHERE user_id = %s AND id = ANY(%s)", (user_id, ids)
            ).fetchall()
        return {str(mid): StoredEntry(str(body), as_array(vec).copy()) for mid, body, vec in (*archived, *live)}

    def history_ids(self, user_id: str) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT memory_id FROM history WHERE user_id = %s GROUP BY memory_id ORDER BY min(seq)",
            (user_id,),
            scope=user_id,
        )
        return [str(r[0]) for r in rows]

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        with self._db.atomic(user_id) as c:
            run(c, "DELETE FROM history WHERE user_id = %s AND memory_id = %s", (user_id, memory_id))
            if not entries:
                return
            with c.cursor() as cur:
                cur.executemany(
                    b"INSERT INTO history (memory_id, user_id, event, at, old_text, new_text, changes) "
                    b"VALUES (%s, %s, %s, %s, %s, %s, %s)",
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
            "r.valid_until, r.superseded_by, array_remove(array_agg(m.id), NULL) FROM relations r "
            "LEFT JOIN relation_sources s ON s.relation = r.id LEFT JOIN memories m ON m.pk = s.pk "
            "WHERE r.user_id = %s GROUP BY r.id ORDER BY r.id",
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
                tuple(sorted(str(i) for i in ids or ())),
            )
            for rid, subj, pred, obj, st, ot, since, until, by, ids in rows
        ]

    def put_relations(self, user_id: str, relations: Sequence[StoredRelation]) -> int:
        with self._db.atomic(user_id) as c:
            if run(c, "SELECT 1 FROM relations WHERE user_id = %s LIMIT 1", (user_id,)).fetchone():
                raise ValidationError(f"user {user_id!r} already has graph relations in this store")
            wanted = sorted({mid for r in relations for mid in r.sources})
            pks = {
                str(mid): int(pk)
                for mid, pk in run(
                    c, "SELECT id, pk FROM memories WHERE user_id = %s AND id = ANY(%s)", (user_id, wanted)
                ).fetchall()
            }
            ids: dict[int, int] = {}
            for r in relations:
                sources = [pks[m] for m in r.sources if m in pks]
                if not sources:
                    continue
                row = run(
                    c,
                    "INSERT INTO relations (user_id, subject, predicate, object, subject_type, object_type, "
                    "valid_from, valid_until) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
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
                ).fetchone()
                assert row is not None
                ids[r.id] = int(row[0])
                for pk in sources:
                    run(
                        c,
                        "INSERT INTO relation_sources (relation, pk, user_id) VALUES (%s, %s, %s) "
                        "ON CONFLICT DO NOTHING",
                        (ids[r.id], pk, user_id),
                    )
            for r in relations:
                if r.id in ids and r.superseded_by is not None and r.superseded_by in ids:
                    run(c, "UPDATE relations SET superseded_by = %s WHERE id = %s", (ids[r.superseded_by], ids[r.id]))
        return len(ids)

    def injection_flags(self, user_id: str) -> builtins.list[InjectionFlag]:
        rows = self._db.read(
            "SELECT memory_id, score, reasons, detector, flagged_at FROM memory_flags WHERE user_id = %s "
            "ORDER BY memory_id",
            (user_id,),
            scope=user_id,
        )
        return [flag_from_row(r) for r in rows]

    def sealed_originals(self, user_id: str) -> builtins.list[SealedOriginal]:
        rows = self._db.read(
            "SELECT memory_id, sealed, kinds, at FROM pii_originals WHERE user_id = %s ORDER BY memory_id",
            (user_id,),
            scope=user_id,
        )
        return [
            SealedOriginal(str(mid), bytes(sealed), tuple(json.loads(kinds)), from_micros(int(at)))
            for mid, sealed, kinds, at in rows
        ]
