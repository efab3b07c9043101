"""The knowledge graph in PostgreSQL: relation edges with sources and validity, entity nodes, slices, merge and
split (erasure by the triggers of the graph migration, as in SQLite).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import Any

import psycopg

from memlane.errors import NotFoundError, ValidationError
from memlane.records.graph import FUNCTIONAL, EntityNode, GraphSlice, Mention, RelationClaim, RelationEdge, node_type
from memlane.store.postgres.db import Database
from memlane.store.postgres.rows import run
from memlane.store.sqlite.rows import from_micros, to_micros

_EDGE_COLUMNS = "r.id, r.subject, r.predicate, r.object, r.valid_from, r.valid_until, r.superseded_by"


def write_relations(c: psycopg.Connection[Any], user_id: str, claims: Sequence[RelationClaim]) -> None:
    """Store relation claims read from memories of ``user_id`` (inside the caller's transaction).

    The same relation still open gains the claim's source; a new object of a functional relation (``lives_in``,
    ``works_at``, ...) closes the subject's current one at the claim's ``valid_from``, as a superseded fact is.
    A claim stated before the current one opened is stored already closed by it. Writers of the same subject and
    predicate (in any process) take turns until they commit, so an open relation is never stored twice; the locks
    are taken in one order, so two writers never wait on each other in a cycle.
    """
    keys = sorted({f"{user_id}\x1f{claim.subject}\x1f{claim.predicate}" for claim in claims})
    for key in keys:
        run(c, "SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", (key,))
    for claim in claims:
        src = run(c, "SELECT pk FROM memories WHERE user_id = %s AND id = %s", (user_id, claim.source_id)).fetchone()
        if src is None:
            continue  # its memory is gone (deleted meanwhile): nothing to hang the edge on
        at = to_micros(claim.valid_from)
        same = run(
            c,
            "SELECT id FROM relations WHERE user_id = %s AND subject = %s AND predicate = %s AND object = %s "
            "AND valid_until IS NULL FOR UPDATE",
            (user_id, claim.subject, claim.predicate, claim.object),
        ).fetchone()
        if same is not None:
            rid = int(same[0])
            run(c, "UPDATE relations SET valid_from = least(valid_from, %s) WHERE id = %s", (at, rid))
        else:
            row = run(
                c,
                "INSERT INTO relations (user_id, subject, predicate, object, subject_type, object_type, valid_from) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (user_id, claim.subject, claim.predicate, claim.object, claim.subject_type, claim.object_type, at),
            ).fetchone()
            assert row is not None
            rid = int(row[0])
            if claim.predicate in FUNCTIONAL:
                _supersede(c, user_id, claim, rid, at)
        run(
            c,
            "INSERT INTO relation_sources (relation, pk, user_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (rid, int(src[0]), user_id),
        )


def _supersede(c: psycopg.Connection[Any], user_id: str, claim: RelationClaim, rid: int, at: int) -> None:
    """Close the other open objects of a functional relation that started before ``at``; or close the new edge
    when a later one already holds.
    """
    others = run(
        c,
        "SELECT id, valid_from FROM relations WHERE user_id = %s AND subject = %s AND predicate = %s "
        "AND object != %s AND valid_until IS NULL ORDER BY id FOR UPDATE",
        (user_id, claim.subject, claim.predicate, claim.object),
    ).fetchall()
    for oid, since in others:
        if int(since) <= at:
            run(c, "UPDATE relations SET valid_until = %s, superseded_by = %s WHERE id = %s", (at, rid, int(oid)))
        else:
            run(
                c,
                "UPDATE relations SET valid_until = %s, superseded_by = %s WHERE id = %s",
                (int(since), int(oid), rid),
            )


def _edges(db: Database, user_id: str, where: str, params: Sequence[Any]) -> builtins.list[RelationEdge]:
    rows = db.read(
        f"SELECT {_EDGE_COLUMNS}, string_agg(m.id, chr(31)) FROM relations r "
        "JOIN relation_sources s ON s.relation = r.id JOIN memories m ON m.pk = s.pk "
        f"WHERE r.user_id = %s AND {where} GROUP BY r.id ORDER BY r.valid_from, r.id",
        (user_id, *params),
        scope=user_id,
    )
    return [
        RelationEdge(
            int(rid),
            str(subj),
            str(pred),
            str(obj),
            from_micros(int(since)),
            None if until is None else from_micros(int(until)),
            None if by is None else int(by),
            tuple(sorted(str(ids).split("\x1f"))),
        )
        for rid, subj, pred, obj, since, until, by, ids in rows
    ]


class PostgresGraph:
    """Graph reads (slices for the graph dimension, relations, entity nodes) and entity merge and split."""

    _db: Database

    def relations(
        self, user_id: str, entities: Sequence[str] = (), *, current_only: bool = False
    ) -> builtins.list[RelationEdge]:
        wanted = list(dict.fromkeys(entities))
        where = "true" if not entities else "(r.subject = ANY(%s) OR r.object = ANY(%s))"
        if current_only:
            where += " AND r.valid_until IS NULL"
        return _edges(self._db, user_id, where, [wanted, wanted] if entities else [])

    def entity_nodes(self, user_id: str, names: Sequence[str]) -> builtins.list[EntityNode]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        with self._db.reading(user_id) as c:
            rows = run(
                c,
                "SELECT alias, canonical, kind, display FROM entities WHERE user_id = %s AND canonical = ANY(%s)",
                (user_id, wanted),
            ).fetchall()
            counts = dict(
                run(
                    c,
                    "SELECT entity, count(*) FROM memory_entities WHERE user_id = %s AND entity = ANY(%s) "
                    "GROUP BY entity",
                    (user_id, wanted),
                ).fetchall()
            )
            typed = dict(
                run(
                    c,
                    "SELECT subject, subject_type FROM relations WHERE user_id = %s AND subject = ANY(%s) "
                    "UNION ALL SELECT object, object_type FROM relations WHERE user_id = %s AND object = ANY(%s)",
                    (user_id, wanted, user_id, wanted),
                ).fetchall()
            )
        own: dict[str, tuple[str, str]] = {}
        aliases: dict[str, list[str]] = {}
        for alias, target, kind, display in rows:
            if alias == target:
                own[str(target)] = (str(kind), str(display))
            else:
                aliases.setdefault(str(target), []).append(str(alias))
        out = []
        for name in wanted:
            if name not in own and name not in counts and name not in typed:
                continue
            kind, display = own.get(name, (str(typed.get(name, "other")), name))
            out.append(
                EntityNode(
                    name, node_type(kind), display, tuple(sorted(aliases.get(name, []))), int(counts.get(name, 0))
                )
            )
        return out

    def entity_memories(self, user_id: str, entity: str, limit: int) -> builtins.list[str]:
        rows = self._db.read(
            "SELECT m.id FROM memory_entities e JOIN memories m ON m.pk = e.pk WHERE e.user_id = %s AND e.entity = %s "
            "ORDER BY m.ts DESC, m.pk DESC LIMIT %s",
            (user_id, entity, limit),
            scope=user_id,
        )
        return [str(r[0]) for r in rows]

    def graph_slice(
        self, user_id: str, memory_ids: Sequence[str], entities: Sequence[str], *, max_degree: int
    ) -> GraphSlice:
        """The has-element edges of the given memories; the memories of those memories' entities and of
        ``entities`` whose degree is at most ``max_degree`` (hubs are not expanded); the current relations among
        all of these entities.
        """
        mentions: dict[tuple[str, str], Mention] = {}
        degree: dict[str, int] = {}
        with self._db.reading(user_id) as c:
            for mid, ent, said in run(
                c,
                "SELECT m.id, e.entity, e.said_by FROM memories m JOIN memory_entities e ON e.pk = m.pk "
                "WHERE m.user_id = %s AND m.id = ANY(%s)",
                (user_id, list(memory_ids)),
            ).fetchall():
                mentions[(str(mid), str(ent))] = Mention(str(mid), str(ent), bool(said))
            names = list(dict.fromkeys([*entities, *(m.entity for m in mentions.values())]))
            for ent, n in run(
                c,
                "SELECT entity, count(*) FROM memory_entities WHERE user_id = %s AND entity = ANY(%s) GROUP BY entity",
                (user_id, names),
            ).fetchall():
                degree[str(ent)] = int(n)
            small = [e for e in names if 0 < degree.get(e, 0) <= max_degree]
            for mid, ent, said in run(
                c,
                "SELECT m.id, e.entity, e.said_by FROM memory_entities e JOIN memories m ON m.pk = e.pk "
                "WHERE e.user_id = %s AND e.entity = ANY(%s)",
                (user_id, small),
            ).fetchall():
                mentions.setdefault((str(mid), str(ent)), Mention(str(mid), str(ent), bool(said)))
        relations = self.relations(user_id, names, current_only=True) if names else []
        return GraphSlice(tuple(mentions.values()), tuple(relations), degree)

    # -- curation ----------------------------------------------------------------------------------------------
    def merge_entities(self, user_id: str, source: str, target: str) -> int:
        if source == target:
            raise ValidationError("merge_entities needs two different entities")
        with self._db.atomic(user_id) as c:
            _require_entity(c, user_id, target)
            _require_entity(c, user_id, source)
            kind = run(
                c,
                "SELECT kind, display FROM entities WHERE user_id = %s AND alias = %s AND canonical = alias",
                (user_id, target),
            ).fetchone()
            if kind is None:  # the target is known from mentions only: give it a node row
                src = run(
                    c, "SELECT kind FROM entities WHERE user_id = %s AND alias = %s", (user_id, source)
                ).fetchone()
                run(
                    c,
                    "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (%s, %s, %s, %s, %s)",
                    (user_id, target, target, src[0] if src else "other", target),
                )
            run(
                c,
                "UPDATE entities SET canonical = %s WHERE user_id = %s AND canonical = %s",
                (target, user_id, source),
            )
            pks = [
                int(r[0])
                for r in run(
                    c,
                    "SELECT pk FROM memory_entities WHERE user_id = %s AND entity = %s ORDER BY pk",
                    (user_id, source),
                ).fetchall()
            ]
            run(
                c,
                "INSERT INTO memory_entities (pk, user_id, entity, said_by) "
                "SELECT pk, user_id, %s, said_by FROM memory_entities WHERE user_id = %s AND entity = %s "
                "ON CONFLICT (pk, entity) DO UPDATE SET said_by = memory_entities.said_by OR excluded.said_by",
                (target, user_id, source),
            )
            for column in ("subject", "object"):
                run(
                    c,
                    f"UPDATE relations SET {column} = %s WHERE user_id = %s AND {column} = %s",
                    (target, user_id, source),
                )
            _rename_in_items(c, pks, source, target)
            run(c, "DELETE FROM memory_entities WHERE user_id = %s AND entity = %s", (user_id, source))
        return len(pks)

    def split_entity(self, user_id: str, entity: str, new_name: str, memory_ids: Sequence[str]) -> int:
        if entity == new_name:
            raise ValidationError("split_entity needs a new name different from the entity's")
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise ValidationError("split_entity needs at least one memory id to move to the new entity")
        with self._db.atomic(user_id) as c:
            _require_entity(c, user_id, entity)
            taken = run(
                c,
                "SELECT 1 FROM entities WHERE user_id = %s AND alias = %s UNION ALL "
                "SELECT 1 FROM memory_entities WHERE user_id = %s AND entity = %s",
                (user_id, new_name, user_id, new_name),
            ).fetchone()
            if taken is not None:
                raise ValidationError(f"{new_name!r} is already an entity of this user; merge instead")
            pks = [
                int(r[0])
                for r in run(
                    c,
                    "SELECT m.pk FROM memories m JOIN memory_entities e ON e.pk = m.pk WHERE m.user_id = %s "
                    "AND e.entity = %s AND m.id = ANY(%s) ORDER BY m.pk",
                    (user_id, entity, ids),
                ).fetchall()
            ]
            if len(pks) != len(ids):
                raise NotFoundError(f"not every given memory of user {user_id!r} involves {entity!r}")
            row = run(
                c,
                "SELECT kind FROM entities WHERE user_id = %s AND alias = %s AND canonical = alias",
                (user_id, entity),
            ).fetchone()
            run(
                c,
                "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (%s, %s, %s, %s, %s)",
                (user_id, new_name, new_name, row[0] if row else "other", new_name),
            )
            run(
                c,
                "UPDATE memory_entities SET entity = %s WHERE entity = %s AND pk = ANY(%s)",
                (new_name, entity, pks),
            )
            # relations read only from the moved memories follow them
            for column in ("subject", "object"):
                run(
                    c,
                    f"UPDATE relations SET {column} = %s WHERE user_id = %s AND {column} = %s AND NOT EXISTS ("
                    "SELECT 1 FROM relation_sources s WHERE s.relation = relations.id AND NOT (s.pk = ANY(%s)))",
                    (new_name, user_id, entity, pks),
                )
            _rename_in_items(c, pks, entity, new_name)
        return len(pks)


def _require_entity(c: psycopg.Connection[Any], user_id: str, name: str) -> None:
    found = run(
        c,
        "SELECT 1 FROM entities WHERE user_id = %s AND alias = %s UNION ALL "
        "SELECT 1 FROM memory_entities WHERE user_id = %s AND entity = %s UNION ALL "
        "SELECT 1 FROM relations WHERE user_id = %s AND (subject = %s OR object = %s) LIMIT 1",
        (user_id, name, user_id, name, user_id, name, name),
    ).fetchone()
    if found is None:
        raise NotFoundError(f"user {user_id!r} has no entity {name!r}")


def _rename_in_items(c: psycopg.Connection[Any], pks: Sequence[int], old: str, new: str) -> None:
    """Rename an entity in the stored ``entities`` list of these memories (kept distinct, in order)."""
    for pk in pks:
        row = run(c, "SELECT entities FROM memories WHERE pk = %s", (pk,)).fetchone()
        if row is None:
            continue
        names = [new if e == old else e for e in json.loads(row[0])]
        run(c, "UPDATE memories SET entities = %s WHERE pk = %s", (json.dumps(list(dict.fromkeys(names))), pk))
