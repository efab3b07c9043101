"""The knowledge graph in SQLite: relation edges with sources and validity, entity nodes, slices, merge and split."""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from memlane.errors import NotFoundError, ValidationError
from memlane.records.graph import FUNCTIONAL, EntityNode, GraphSlice, Mention, RelationClaim, RelationEdge, node_type
from memlane.store.sqlite.db import CHUNK, Database, marks
from memlane.store.sqlite.rows import from_micros, to_micros

_EDGE_COLUMNS = "r.id, r.subject, r.predicate, r.object, r.valid_from, r.valid_until, r.superseded_by"


def write_relations(c: sqlite3.Connection, user_id: str, claims: Sequence[RelationClaim]) -> None:
    """Store relation claims read from memories of ``user_id`` (inside the caller's transaction).

    The same relation still open gains the claim's source; a new object of a functional relation (``lives_in``,
    ``works_at``, ...) closes the subject's current one at the claim's ``valid_from``, as a superseded fact is.
    A claim stated before the current one opened is stored already closed by it.
    """
    for claim in claims:
        src = c.execute("SELECT pk FROM memories WHERE +user_id = ? AND id = ?", (user_id, claim.source_id)).fetchone()
        if src is None:
            continue  # its memory is gone (deleted meanwhile): nothing to hang the edge on
        at = to_micros(claim.valid_from)
        same = c.execute(
            "SELECT id FROM relations WHERE user_id = ? AND subject = ? AND predicate = ? AND object = ? "
            "AND valid_until IS NULL",
            (user_id, claim.subject, claim.predicate, claim.object),
        ).fetchone()
        if same is not None:
            rid = int(same[0])
            c.execute("UPDATE relations SET valid_from = min(valid_from, ?) WHERE id = ?", (at, rid))
        else:
            rid = int(
                c.execute(
                    "INSERT INTO relations (user_id, subject, predicate, object, subject_type, object_type, "
                    "valid_from) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (user_id, claim.subject, claim.predicate, claim.object, claim.subject_type, claim.object_type, at),
                ).lastrowid
                or 0
            )
            if claim.predicate in FUNCTIONAL:
                _supersede(c, user_id, claim, rid, at)
        c.execute("INSERT OR IGNORE INTO relation_sources (relation, pk) VALUES (?, ?)", (rid, int(src[0])))


def _supersede(c: sqlite3.Connection, user_id: str, claim: RelationClaim, rid: int, at: int) -> None:
    """Close the other open objects of a functional relation that started before ``at``; or close the new edge
    when a later one already holds.
    """
    others = c.execute(
        "SELECT id, valid_from FROM relations WHERE user_id = ? AND subject = ? AND predicate = ? AND object != ? "
        "AND valid_until IS NULL",
        (user_id, claim.subject, claim.predicate, claim.object),
    ).fetchall()
    for oid, since in others:
        if int(since) <= at:
            c.execute("UPDATE relations SET valid_until = ?, superseded_by = ? WHERE id = ?", (at, rid, int(oid)))
        else:
            c.execute("UPDATE relations SET valid_until = ?, superseded_by = ? WHERE id = ?", (int(since), oid, rid))


def _edges(db: Database, user_id: str, where: str, params: Sequence[Any]) -> builtins.list[RelationEdge]:
    rows = db.read(
        f"SELECT {_EDGE_COLUMNS}, group_concat(m.id, char(31)) FROM relations r "
        "JOIN relation_sources s ON s.relation = r.id JOIN memories m ON m.pk = s.pk "
        f"WHERE r.user_id = ? AND {where} GROUP BY r.id ORDER BY r.valid_from, r.id",
        (user_id, *params),
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


class SQLiteGraph:
    """Graph reads (slices for the graph dimension, relations, entity nodes) and entity merge and split."""

    _db: Database

    def relations(
        self, user_id: str, entities: Sequence[str] = (), *, current_only: bool = False
    ) -> builtins.list[RelationEdge]:
        wanted = list(dict.fromkeys(entities))[:CHUNK]
        where = "1" if not entities else f"(r.subject IN ({marks(len(wanted))}) OR r.object IN ({marks(len(wanted))}))"
        if current_only:
            where += " AND r.valid_until IS NULL"
        return _edges(self._db, user_id, where, [*wanted, *wanted] if entities else [])

    def entity_nodes(self, user_id: str, names: Sequence[str]) -> builtins.list[EntityNode]:
        wanted = list(dict.fromkeys(names))[:CHUNK]
        if not wanted:
            return []
        rows = self._db.read(
            "SELECT alias, canonical, kind, display FROM entities WHERE user_id = ? "
            f"AND canonical IN ({marks(len(wanted))})",
            (user_id, *wanted),
        )
        counts = dict(
            self._db.read(
                "SELECT entity, count(*) FROM memory_entities WHERE user_id = ? "
                f"AND entity IN ({marks(len(wanted))}) GROUP BY entity",
                (user_id, *wanted),
            )
        )
        typed = dict(
            self._db.read(
                f"SELECT subject, subject_type FROM relations WHERE user_id = ? AND subject IN ({marks(len(wanted))}) "
                f"UNION ALL SELECT object, object_type FROM relations WHERE user_id = ? "
                f"AND object IN ({marks(len(wanted))})",
                (user_id, *wanted, user_id, *wanted),
            )
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
            "SELECT m.id FROM memory_entities e JOIN memories m ON m.pk = e.pk WHERE e.user_id = ? AND e.entity = ? "
            "ORDER BY m.ts DESC, m.pk DESC LIMIT ?",
            (user_id, entity, limit),
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
        for mid, ent, said in self._db.read_in(
            "SELECT m.id, e.entity, e.said_by FROM memories m CROSS JOIN memory_entities e ON e.pk = m.pk "
            "WHERE +m.user_id = ? AND m.id IN ({marks})",
            memory_ids,
            (user_id,),
        ):
            mentions[(str(mid), str(ent))] = Mention(str(mid), str(ent), bool(said))
        names = list(dict.fromkeys([*entities, *(m.entity for m in mentions.values())]))
        degree: dict[str, int] = {}
        for ent, n in self._db.read_in(
            "SELECT entity, count(*) FROM memory_entities WHERE user_id = ? AND entity IN ({marks}) GROUP BY entity",
            names,
            (user_id,),
        ):
            degree[str(ent)] = int(n)
        small = [e for e in names if 0 < degree.get(e, 0) <= max_degree]
        for mid, ent, said in self._db.read_in(
            "SELECT m.id, e.entity, e.said_by FROM memory_entities e JOIN memories m ON m.pk = e.pk "
            "WHERE e.user_id = ? AND e.entity IN ({marks})",
            small,
            (user_id,),
        ):
            mentions.setdefault((str(mid), str(ent)), Mention(str(mid), str(ent), bool(said)))
        relations: dict[int, RelationEdge] = {}
        for start in range(0, len(names), CHUNK // 2):
            chunk = names[start : start + CHUNK // 2]
            for edge in self.relations(user_id, chunk, current_only=True):
                relations[edge.id] = edge
        return GraphSlice(tuple(mentions.values()), tuple(relations.values()), degree)

    # -- curation ----------------------------------------------------------------------------------------------
    def merge_entities(self, user_id: str, source: str, target: str) -> int:
        if source == target:
            raise ValidationError("merge_entities needs two different entities")
        with self._db.atomic() as c:
            _require_entity(c, user_id, target)
            _require_entity(c, user_id, source)
            kind = c.execute(
                "SELECT kind, display FROM entities WHERE user_id = ? AND alias = ? AND canonical = alias",
                (user_id, target),
            ).fetchone()
            if kind is None:  # the target is known from mentions only: give it a node row
                src = c.execute(
                    "SELECT kind FROM entities WHERE user_id = ? AND alias = ?", (user_id, source)
                ).fetchone()
                c.execute(
                    "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (?, ?, ?, ?, ?)",
                    (user_id, target, target, src[0] if src else "other", target),
                )
            c.execute(
                "UPDATE entities SET canonical = ? WHERE user_id = ? AND canonical = ?", (target, user_id, source)
            )
            pks = [
                int(r[0])
                for r in c.execute("SELECT pk FROM memory_entities WHERE user_id = ? AND entity = ?", (user_id, source))
            ]
            c.execute(
                "INSERT INTO memory_entities (pk, user_id, entity, said_by) "
                "SELECT pk, user_id, ?, said_by FROM memory_entities WHERE user_id = ? AND entity = ? "
                "ON CONFLICT(pk, entity) DO UPDATE SET said_by = max(said_by, excluded.said_by)",
                (target, user_id, source),
            )
            for column in ("subject", "object"):
                c.execute(
                    f"UPDATE relations SET {column} = ? WHERE user_id = ? AND {column} = ?", (target, user_id, source)
                )
            _rename_in_items(c, pks, source, target)
            c.execute("DELETE FROM memory_entities WHERE user_id = ? AND entity = ?", (user_id, source))
            self._db.bump(c, user_id)
        return len(pks)

    def split_entity(self, user_id: str, entity: str, new_name: str, memory_ids: Sequence[str]) -> int:
        if entity == new_name:
            raise ValidationError("split_entity needs a new name different from the entity's")
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise ValidationError("split_entity needs at least one memory id to move to the new entity")
        with self._db.atomic() as c:
            _require_entity(c, user_id, entity)
            taken = c.execute(
                "SELECT 1 FROM entities WHERE user_id = ? AND alias = ? UNION ALL "
                "SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ?",
                (user_id, new_name, user_id, new_name),
            ).fetchone()
            if taken is not None:
                raise ValidationError(f"{new_name!r} is already an entity of this user; merge instead")
            pks: list[int] = []
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start : start + CHUNK]
                pks.extend(
                    int(r[0])
                    for r in c.execute(
                        "SELECT m.pk FROM memories m JOIN memory_entities e ON e.pk = m.pk WHERE +m.user_id = ? "
                        f"AND e.entity = ? AND m.id IN ({marks(len(chunk))})",
                        (user_id, entity, *chunk),
                    )
                )
            if len(pks) != len(ids):
                raise NotFoundError(f"not every given memory of user {user_id!r} involves {entity!r}")
            row = c.execute(
                "SELECT kind FROM entities WHERE user_id = ? AND alias = ? AND canonical = alias", (user_id, entity)
            ).fetchone()
            c.execute(
                "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (?, ?, ?, ?, ?)",
                (user_id, new_name, new_name, row[0] if row else "other", new_name),
            )
            for start in range(0, len(pks), CHUNK):
                chunk_pks = pks[start : start + CHUNK]
                c.execute(
                    f"UPDATE memory_entities SET entity = ? WHERE entity = ? AND pk IN ({marks(len(chunk_pks))})",
                    (new_name, entity, *chunk_pks),
                )
            # relations read only from the moved memories follow them
            moved = ",".join(str(p) for p in pks)
            for column in ("subject", "object"):
                c.execute(
                    f"UPDATE relations SET {column} = ? WHERE user_id = ? AND {column} = ? AND NOT EXISTS ("
                    f"SELECT 1 FROM relation_sources s WHERE s.relation = relations.id AND s.pk NOT IN ({moved}))",
                    (new_name, user_id, entity),
                )
            _rename_in_items(c, pks, entity, new_name)
            self._db.bump(c, user_id)
        return len(pks)


def _require_entity(c: sqlite3.Connection, user_id: str, name: str) -> None:
    found = c.execute(
        "SELECT 1 FROM entities WHERE user_id = ? AND alias = ? UNION ALL "
        "SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ? UNION ALL "
        "SELECT 1 FROM relations WHERE user_id = ? AND (subject = ? OR object = ?) LIMIT 1",
        (user_id, name, user_id, name, user_id, name, name),
    ).fetchone()
    if found is None:
        raise NotFoundError(f"user {user_id!r} has no entity {name!r}")


def _rename_in_items(c: sqlite3.Connection, pks: Sequence[int], old: str, new: str) -> None:
    """Rename an entity in the stored ``entities`` list of these memories (kept distinct, in order)."""
    for pk in pks:
        row = c.execute("SELECT entities FROM memories WHERE pk = ?", (pk,)).fetchone()
        if row is None:
            continue
        names = [new if e == old else e for e in json.loads(row[0])]
        c.execute("UPDATE memories SET entities = ? WHERE pk = ?", (json.dumps(list(dict.fromkeys(names))), pk))
