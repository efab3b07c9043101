"""The knowledge graph, once for both SQL stores: relation edges with sources and validity, entity nodes, slices,
merge and split (erasure by the triggers of the graph migration). How concurrent writers of one relation take turns
is the backend's (``RelationWriter.serialise``), and so is what a curation must tell the caches (``_curated``).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Final, Generic, Protocol, TypeVar

from memlane.errors import NotFoundError, ValidationError
from memlane.records.graph import FUNCTIONAL, EntityNode, GraphSlice, Mention, RelationClaim, RelationEdge, node_type
from memlane.store.sql.dialect import Connection, Dialect
from memlane.store.sql.feedback import Writer
from memlane.store.sql.rows import from_micros, to_micros

_EDGE_COLUMNS: Final = "r.id, r.subject, r.predicate, r.object, r.valid_from, r.valid_until, r.superseded_by"


class RelationWriter:
    """Relation claims stored inside the caller's transaction, in one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect

    def serialise(self, c: Connection, user_id: str, claims: Sequence[RelationClaim]) -> None:
        """Make writers of the same subject and predicate take turns until they commit (nothing to do where the
        database has one writer at a time).
        """

    def write_relations(self, c: Connection, user_id: str, claims: Sequence[RelationClaim]) -> None:
        """Store relation claims read from memories of ``user_id``.

        The same relation still open gains the claim's source; a new object of a functional relation (``lives_in``,
        ``works_at``, ...) closes the subject's current one at the claim's ``valid_from``, as a superseded fact is.
        A claim stated before the current one opened is stored already closed by it.
        """
        d = self.d
        self.serialise(c, user_id, claims)
        source = (
            "INSERT INTO relation_sources (relation, pk, user_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
            if d.confines  # rows carry their user for row-level security
            else "INSERT INTO relation_sources (relation, pk) VALUES (?, ?) ON CONFLICT DO NOTHING"
        )
        for claim in claims:
            src = d.run(
                c, f"SELECT pk FROM memories WHERE {d.unindexed('user_id')} = ? AND id = ?", (user_id, claim.source_id)
            ).fetchone()
            if src is None:
                continue  # its memory is gone (deleted meanwhile): nothing to hang the edge on
            at = to_micros(claim.valid_from)
            same = d.run(
                c,
                "SELECT id FROM relations WHERE user_id = ? AND subject = ? AND predicate = ? AND object = ? "
                f"AND valid_until IS NULL{d.lock('FOR UPDATE')}",
                (user_id, claim.subject, claim.predicate, claim.object),
            ).fetchone()
            if same is not None:
                rid = int(same[0])
                d.run(c, f"UPDATE relations SET valid_from = {d.least}(valid_from, ?) WHERE id = ?", (at, rid))
            else:
                rid = d.insert_id(
                    c,
                    "INSERT INTO relations (user_id, subject, predicate, object, subject_type, object_type, "
                    "valid_from) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (user_id, claim.subject, claim.predicate, claim.object, claim.subject_type, claim.object_type, at),
                )
                if claim.predicate in FUNCTIONAL:
                    self._supersede(c, user_id, claim, rid, at)
            d.run(c, source, (rid, int(src[0]), user_id) if d.confines else (rid, int(src[0])))

    def _supersede(self, c: Connection, user_id: str, claim: RelationClaim, rid: int, at: int) -> None:
        """Close the other open objects of a functional relation that started before ``at``; or close the new edge
        when a later one already holds.
        """
        d = self.d
        others = d.run(
            c,
            "SELECT id, valid_from FROM relations WHERE user_id = ? AND subject = ? AND predicate = ? "
            f"AND object != ? AND valid_until IS NULL ORDER BY id{d.lock('FOR UPDATE')}",
            (user_id, claim.subject, claim.predicate, claim.object),
        ).fetchall()
        for oid, since in others:
            if int(since) <= at:
                d.run(c, "UPDATE relations SET valid_until = ?, superseded_by = ? WHERE id = ?", (at, rid, int(oid)))
            else:
                d.run(
                    c,
                    "UPDATE relations SET valid_until = ?, superseded_by = ? WHERE id = ?",
                    (int(since), int(oid), rid),
                )


class GraphDatabase(Writer, Protocol):
    """What the graph needs of a backend's database: transactions, reads, and one connection for several reads."""

    def reading(self, scope: str | None = None) -> AbstractContextManager[Any]: ...


G = TypeVar("G", bound=GraphDatabase)


class SQLGraph(Generic[G]):
    """Graph reads (slices for the graph dimension, relations, entity nodes) and entity merge and split (mixed into a
    backend's store).
    """

    _db: G
    _dialect: ClassVar[Dialect]

    def _curated(self, c: Connection, user_id: str) -> None:
        """After a merge or a split, inside its transaction: what the backend's caches must learn (nothing here)."""

    def _edges(self, user_id: str, where: str, params: Sequence[Any]) -> builtins.list[RelationEdge]:
        d = self._dialect
        rows = d.read(
            self._db,
            f"SELECT {_EDGE_COLUMNS}, {d.joined('m.id')} FROM relations r "
            "JOIN relation_sources s ON s.relation = r.id JOIN memories m ON m.pk = s.pk "
            f"WHERE r.user_id = ? AND {where} GROUP BY r.id ORDER BY r.valid_from, r.id",
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

    def relations(
        self, user_id: str, entities: Sequence[str] = (), *, current_only: bool = False
    ) -> builtins.list[RelationEdge]:
        d = self._dialect
        where, params = d.true, []
        if entities:
            wanted = d.capped(entities)
            subject, sp = d.in_list("r.subject", wanted)
            obj, op = d.in_list("r.object", wanted)
            where, params = f"({subject} OR {obj})", [*sp, *op]
        if current_only:
            where += " AND r.valid_until IS NULL"
        return self._edges(user_id, where, params)

    def entity_nodes(self, user_id: str, names: Sequence[str]) -> builtins.list[EntityNode]:
        d = self._dialect
        wanted = d.capped(names)
        if not wanted:
            return []
        targets, tp = d.in_list("canonical", wanted)
        mentioned, mp = d.in_list("entity", wanted)
        subjects, sp = d.in_list("subject", wanted)
        objects, op = d.in_list("object", wanted)
        with self._db.reading(user_id) as c:
            rows = d.run(
                c,
                f"SELECT alias, canonical, kind, display FROM entities WHERE user_id = ? AND {targets}",
                (user_id, *tp),
            ).fetchall()
            counts = dict(
                d.run(
                    c,
                    f"SELECT entity, count(*) FROM memory_entities WHERE user_id = ? AND {mentioned} GROUP BY entity",
                    (user_id, *mp),
                ).fetchall()
            )
            typed = dict(
                d.run(
                    c,
                    f"SELECT subject, subject_type FROM relations WHERE user_id = ? AND {subjects} "
                    f"UNION ALL SELECT object, object_type FROM relations WHERE user_id = ? AND {objects}",
                    (user_id, *sp, user_id, *op),
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
        rows = self._dialect.read(
            self._db,
            "SELECT m.id FROM memory_entities e JOIN memories m ON m.pk = e.pk WHERE e.user_id = ? AND e.entity = ? "
            "ORDER BY m.ts DESC, m.pk DESC LIMIT ?",
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
        d = self._dialect
        mentions: dict[tuple[str, str], Mention] = {}
        degree: dict[str, int] = {}
        with self._db.reading(user_id) as c:
            for chunk in d.chunks(memory_ids):
                among, params = d.in_list("m.id", chunk)
                for mid, ent, said in d.run(
                    c,
                    f"SELECT m.id, e.entity, e.said_by FROM memories m {d.ordered_join} memory_entities e "
                    f"ON e.pk = m.pk WHERE {d.unindexed('m.user_id')} = ? AND {among}",
                    (user_id, *params),
                ).fetchall():
                    mentions[(str(mid), str(ent))] = Mention(str(mid), str(ent), bool(said))
            names = list(dict.fromkeys([*entities, *(m.entity for m in mentions.values())]))
            for chunk in d.chunks(names):
                among, params = d.in_list("entity", chunk)
                for ent, n in d.run(
                    c,
                    f"SELECT entity, count(*) FROM memory_entities WHERE user_id = ? AND {among} GROUP BY entity",
                    (user_id, *params),
                ).fetchall():
                    degree[str(ent)] = int(n)
            small = [e for e in names if 0 < degree.get(e, 0) <= max_degree]
            for chunk in d.chunks(small):
                among, params = d.in_list("e.entity", chunk)
                for mid, ent, said in d.run(
                    c,
                    "SELECT m.id, e.entity, e.said_by FROM memory_entities e JOIN memories m ON m.pk = e.pk "
                    f"WHERE e.user_id = ? AND {among}",
                    (user_id, *params),
                ).fetchall():
                    mentions.setdefault((str(mid), str(ent)), Mention(str(mid), str(ent), bool(said)))
        relations: dict[int, RelationEdge] = {}
        for chunk in d.chunks(names, lists=2):
            for edge in self.relations(user_id, chunk, current_only=True):
                relations[edge.id] = edge
        return GraphSlice(tuple(mentions.values()), tuple(relations.values()), degree)

    # -- curation ----------------------------------------------------------------------------------------------
    def merge_entities(self, user_id: str, source: str, target: str) -> int:
        if source == target:
            raise ValidationError("merge_entities needs two different entities")
        d = self._dialect
        with self._db.atomic(user_id) as c:
            _require_entity(d, c, user_id, target)
            _require_entity(d, c, user_id, source)
            kind = d.run(
                c,
                "SELECT kind, display FROM entities WHERE user_id = ? AND alias = ? AND canonical = alias",
                (user_id, target),
            ).fetchone()
            if kind is None:  # the target is known from mentions only: give it a node row
                src = d.run(
                    c, "SELECT kind FROM entities WHERE user_id = ? AND alias = ?", (user_id, source)
                ).fetchone()
                d.run(
                    c,
                    "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (?, ?, ?, ?, ?)",
                    (user_id, target, target, src[0] if src else "other", target),
                )
            d.run(c, "UPDATE entities SET canonical = ? WHERE user_id = ? AND canonical = ?", (target, user_id, source))
            pks = [
                int(r[0])
                for r in d.run(
                    c, "SELECT pk FROM memory_entities WHERE user_id = ? AND entity = ? ORDER BY pk", (user_id, source)
                ).fetchall()
            ]
            d.run(
                c,
                "INSERT INTO memory_entities (pk, user_id, entity, said_by) "
                "SELECT pk, user_id, ?, said_by FROM memory_entities WHERE user_id = ? AND entity = ? "
                "ON CONFLICT (pk, entity) DO UPDATE SET said_by = "
                f"{d.either('memory_entities.said_by', 'excluded.said_by')}",
                (target, user_id, source),
            )
            for column in ("subject", "object"):
                d.run(
                    c,
                    f"UPDATE relations SET {column} = ? WHERE user_id = ? AND {column} = ?",
                    (target, user_id, source),
                )
            _rename_in_items(d, c, pks, source, target)
            d.run(c, "DELETE FROM memory_entities WHERE user_id = ? AND entity = ?", (user_id, source))
            self._curated(c, user_id)
        return len(pks)

    def split_entity(self, user_id: str, entity: str, new_name: str, memory_ids: Sequence[str]) -> int:
        if entity == new_name:
            raise ValidationError("split_entity needs a new name different from the entity's")
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise ValidationError("split_entity needs at least one memory id to move to the new entity")
        d = self._dialect
        with self._db.atomic(user_id) as c:
            _require_entity(d, c, user_id, entity)
            taken = d.run(
                c,
                "SELECT 1 FROM entities WHERE user_id = ? AND alias = ? UNION ALL "
                "SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ?",
                (user_id, new_name, user_id, new_name),
            ).fetchone()
            if taken is not None:
                raise ValidationError(f"{new_name!r} is already an entity of this user; merge instead")
            pks: list[int] = []
            for chunk in d.chunks(ids):
                among, params = d.in_list("m.id", chunk)
                pks.extend(
                    int(r[0])
                    for r in d.run(
                        c,
                        "SELECT m.pk FROM memories m JOIN memory_entities e ON e.pk = m.pk "
                        f"WHERE {d.unindexed('m.user_id')} = ? AND e.entity = ? AND {among} ORDER BY m.pk",
                        (user_id, entity, *params),
                    ).fetchall()
                )
            if len(pks) != len(ids):
                raise NotFoundError(f"not every given memory of user {user_id!r} involves {entity!r}")
            row = d.run(
                c, "SELECT kind FROM entities WHERE user_id = ? AND alias = ? AND canonical = alias", (user_id, entity)
            ).fetchone()
            d.run(
                c,
                "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (?, ?, ?, ?, ?)",
                (user_id, new_name, new_name, row[0] if row else "other", new_name),
            )
            for chunk_pks in d.chunks(pks):
                among, params = d.in_list("pk", chunk_pks)
                d.run(
                    c,
                    f"UPDATE memory_entities SET entity = ? WHERE entity = ? AND {among}",
                    (new_name, entity, *params),
                )
            # relations read only from the moved memories follow them
            elsewhere, moved = d.not_among("s.pk", pks)
            for column in ("subject", "object"):
                d.run(
                    c,
                    f"UPDATE relations SET {column} = ? WHERE user_id = ? AND {column} = ? AND NOT EXISTS ("
                    f"SELECT 1 FROM relation_sources s WHERE s.relation = relations.id AND {elsewhere})",
                    (new_name, user_id, entity, *moved),
                )
            _rename_in_items(d, c, pks, entity, new_name)
            self._curated(c, user_id)
        return len(pks)


def _require_entity(d: Dialect, c: Connection, user_id: str, name: str) -> None:
    found = d.run(
        c,
        "SELECT 1 FROM entities WHERE user_id = ? AND alias = ? UNION ALL "
        "SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ? UNION ALL "
        "SELECT 1 FROM relations WHERE user_id = ? AND (subject = ? OR object = ?) LIMIT 1",
        (user_id, name, user_id, name, user_id, name, name),
    ).fetchone()
    if found is None:
        raise NotFoundError(f"user {user_id!r} has no entity {name!r}")


def _rename_in_items(d: Dialect, c: Connection, pks: Sequence[int], old: str, new: str) -> None:
    """Rename an entity in the stored ``entities`` list of these memories (kept distinct, in order)."""
    for pk in pks:
        row = d.run(c, "SELECT entities FROM memories WHERE pk = ?", (pk,)).fetchone()
        if row is None:
            continue
        names = [new if e == old else e for e in json.loads(row[0])]
        d.run(c, "UPDATE memories SET entities = ? WHERE pk = ?", (json.dumps(list(dict.fromkeys(names))), pk))
