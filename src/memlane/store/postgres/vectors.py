"""The dense dimension in PostgreSQL: pgvector HNSW (inner product of unit vectors) with a tunable ``ef_search``, the embedding cache, the
model identity, and re-embedding beside the live vectors, switched in atomically.

The vector column has no fixed dimension (the model is chosen after the schema exists); the HNSW index is an
expression index over ``vec::vector(dim)``, one per dimension in use, created when a model is first recorded.
A search casts the same way, so the planner can use it; a small user is answered exactly from the user index.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import psycopg

from memlane.embedding.base import Vectors
from memlane.models import Filters, MemoryItem
from memlane.store.postgres.db import Database
from memlane.store.postgres.hot_feed import HotScopes
from memlane.store.postgres.rows import SELECTED, as_array, filter_sql, run
from memlane.store.sql.rows import row_to_item

TARGET_KEY: Final = "reindex_target"

log = logging.getLogger(__name__)


def ensure_hnsw(c: psycopg.Connection[Any], dim: int) -> None:
    """The HNSW index for vectors of ``dim`` dimensions (created once; concurrent creators queue on the lock).

    A role that may not create it (not the table's owner) goes on without it, with a warning naming the statement
    for the owner to run: searches stay exact, only slower on large users.
    """
    dim = int(dim)
    name = f"memories_vec_hnsw_ip_{dim}"
    statement = f"CREATE INDEX IF NOT EXISTS {name} ON memories USING hnsw ((vec::vector({dim})) vector_ip_ops)"
    if run(c, "SELECT to_regclass(%s)", (name,)).fetchone() not in (None, (None,)):
        return
    run(c, "SELECT pg_advisory_xact_lock(hashtextextended('memlane-hnsw', 0))")
    try:
        with c.transaction():
            run(c, statement)
    except psycopg.errors.InsufficientPrivilege:
        log.warning("no HNSW index for %d-dimensional vectors (this role may not create it); run: %s", dim, statement)


def drop_other_hnsw(c: psycopg.Connection[Any], dim: int) -> None:
    """Drop the HNSW indexes over any dimension but ``dim`` (the model changed)."""
    keep = f"memories_vec_hnsw_ip_{int(dim)}"
    names = run(
        c,
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'memories' "
        "AND indexname LIKE 'memories_vec_hnsw_ip_%%' AND indexname != %s",
        (keep,),
    ).fetchall()
    for (name,) in names:
        run(c, f'DROP INDEX IF EXISTS "{name}"')


def _set_meta(c: psycopg.Connection[Any], key: str, value: str) -> None:
    run(
        c,
        "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


class PostgresVectorIndex:
    """Cosine similarity as the inner product of unit-normalised vectors (``-(a <#> b)``, computed by pgvector):
    as the SQLite store scores, and a zero vector scores 0 instead of leaving the index (as cosine distance would).
    """

    _db: Database
    _hot: HotScopes

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Done once the read models of large scopes are built (pgvector updates its HNSW index in the
        statement that writes the row).
        """
        return self._hot.settle(timeout)

    def vector_search(
        self, user_id: str, query: Vectors, limit: int, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        if limit <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        dim = len(q)
        where, params = filter_sql(filters)
        rows = self._db.read(
            f"SELECT m.id, -(m.vec::vector({dim}) <#> %s::vector({dim})) AS s FROM memories m "
            f"WHERE m.user_id = %s AND {where} ORDER BY m.vec::vector({dim}) <#> %s::vector({dim}), m.pk LIMIT %s",
            (q, user_id, *params, q, int(limit)),
            scope=user_id,
        )
        return [(str(i), float(s)) for i, s in rows]

    def vector_scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        if not memory_ids:
            return {}
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        rows = self._db.read(
            "SELECT id, -(vec <#> %s) FROM memories WHERE user_id = %s AND id = ANY(%s)",
            (q, user_id, list(dict.fromkeys(memory_ids))),
            scope=user_id,
        )
        return {str(i): float(s) for i, s in rows}

    def cached_vectors(self, embed_hashes: Sequence[str]) -> dict[str, Vectors]:
        if not embed_hashes:
            return {}
        rows = self._db.read(
            "SELECT DISTINCT ON (embed_hash) embed_hash, vec FROM memories WHERE embed_hash = ANY(%s)",
            (list(dict.fromkeys(embed_hashes)),),
        )
        return {str(h): as_array(v) for h, v in rows}

    def embedder_identity(self) -> tuple[str, int] | None:
        meta = dict(self._db.read("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"))
        if "embedder" not in meta:
            return None
        return str(meta["embedder"]), int(meta["dim"])

    def set_embedder_identity(self, identity: str, dim: int) -> None:
        with self._db.atomic() as c:
            ensure_hnsw(c, dim)
            _set_meta(c, "embedder", identity)
            _set_meta(c, "dim", str(int(dim)))

    def defer_vector_index(self) -> None:
        held = self.embedder_identity()
        if held is None:
            return
        with self._db.atomic() as c:
            try:
                with c.transaction():
                    run(c, f"DROP INDEX IF EXISTS memories_vec_hnsw_ip_{int(held[1])}")
            except psycopg.errors.InsufficientPrivilege:  # not the table's owner: the copy keeps the index up
                log.warning("this role may not drop the HNSW index; the copy maintains it row by row")

    def restore_vector_index(self) -> None:
        held = self.embedder_identity()
        if held is None:
            return
        with self._db.atomic() as c:
            # pgvector builds fastest when the graph fits in maintenance_work_mem: at least 1 GB for this
            # transaction, never less than the server is configured with.
            run(
                c,
                "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting("
                "'maintenance_work_mem')), pg_size_bytes('1GB')) / 1024 || 'kB', true)",
            )
            ensure_hnsw(c, held[1])

    def reindex_begin(self, identity: str, dim: int) -> None:
        target = f"{dim}:{identity}"
        with self._db.atomic() as c:
            row = run(c, "SELECT value FROM meta WHERE key = %s FOR UPDATE", (TARGET_KEY,)).fetchone()
            if row is None or row[0] != target:
                run(c, "DELETE FROM vectors_next")
                _set_meta(c, TARGET_KEY, target)

    def reindex_pending(self, after: str | None, limit: int) -> builtins.list[MemoryItem]:
        rows = self._db.read(
            f"SELECT {SELECTED} FROM memories m WHERE m.pk > coalesce((SELECT pk FROM memories WHERE id = %s), 0) "
            "AND NOT EXISTS (SELECT 1 FROM vectors_next n WHERE n.pk = m.pk) ORDER BY m.pk LIMIT %s",
            (after, limit),
        )
        return [row_to_item(r) for r in rows]

    def reindex_stage(self, vectors: Mapping[str, Vectors], identity: str, dim: int, *, final: bool) -> bool:
        with self._db.atomic() as c:
            if vectors:
                ids = list(vectors)
                vecs = [np.ascontiguousarray(vectors[i], dtype=np.float32).reshape(-1) for i in ids]
                with c.cursor() as cur:
                    cur.executemany(
                        b"INSERT INTO vectors_next (pk, vec) SELECT pk, %s FROM memories WHERE id = %s "
                        b"ON CONFLICT (pk) DO UPDATE SET vec = excluded.vec",
                        list(zip(vecs, ids, strict=True)),
                    )
            if not final:
                return False
            run(c, "LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE")  # no memory is added while switching
            missing = run(
                c, "SELECT 1 FROM memories m WHERE NOT EXISTS (SELECT 1 FROM vectors_next n WHERE n.pk = m.pk) LIMIT 1"
            ).fetchone()
            if missing is not None:
                return False
            drop_other_hnsw(c, dim)  # an index over another dimension would refuse the new vectors
            run(c, "UPDATE memories m SET vec = n.vec FROM vectors_next n WHERE n.pk = m.pk")
            run(c, "DELETE FROM vectors_next")
            run(c, "DELETE FROM passages")  # the old model's: documents are passaged again (Memory.reindex)
            run(c, "DELETE FROM meta WHERE key = %s", (TARGET_KEY,))
            ensure_hnsw(c, dim)
            _set_meta(c, "embedder", identity)
            _set_meta(c, "dim", str(int(dim)))
            return True
