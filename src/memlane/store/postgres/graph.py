"""The knowledge graph in PostgreSQL: the shared graph (``memlane.store.sql.graph``); writers of one relation, in
any process, take turns under advisory locks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

from memlane.records.graph import RelationClaim
from memlane.store.postgres.db import Database
from memlane.store.sql.dialect import POSTGRES, Connection, Dialect
from memlane.store.sql.graph import RelationWriter, SQLGraph


class _Relations(RelationWriter):
    def serialise(self, c: Connection, user_id: str, claims: Sequence[RelationClaim]) -> None:
        """Writers of the same subject and predicate (in any process) take turns until they commit, so an open
        relation is never stored twice; the locks are taken in one order, so two writers never wait on each other
        in a cycle.
        """
        for key in sorted({f"{user_id}\x1f{claim.subject}\x1f{claim.predicate}" for claim in claims}):
            self.d.run(c, "SELECT pg_advisory_xact_lock(hashtextextended(?, 1))", (key,))


write_relations: Final = _Relations(POSTGRES).write_relations


class PostgresGraph(SQLGraph[Database]):
    """Graph reads (slices for the graph dimension, relations, entity nodes) and entity merge and split."""

    _dialect: ClassVar[Dialect] = POSTGRES
