"""The Qdrant copy of a database's vectors, kept in step with SQLite's change log, searched with payload filters.

SQLite stays the source of truth (rows, text, and each vector, which the embedding cache, re-embedding and
``memlane migrate`` read). Every vector write, and every change of a field Qdrant filters on, appends ``(seq, pk)``
to ``vector_log`` in the writing transaction (triggers, migrations 0007 and 0010). The mirror applies the log to
Qdrant after each commit and before each search, in a write transaction of the database (so two processes never
apply it out of order), and records the last ``seq`` it applied in ``vector_mirrors``. So:

- a commit whose Qdrant write failed or never happened (the process died between the two) is applied at the next
  write, search or open: upserts and deletes are idempotent, replaying is always safe;
- points Qdrant holds that the database does not (a ``delete_all`` that died before reaching Qdrant, a database
  restored from a backup) are found on open, where the point count is checked against the database, and removed;
- a log pruned past the mirror's ``seq`` (by another opener), another model, or a missing collection → the
  collection is rebuilt from the database.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from qdrant_client import models as qm

from memlane.embedding.base import Vectors
from memlane.errors import StoreError
from memlane.models import Filters
from memlane.store.qdrant.filters import PAYLOAD_SQL, payload_of, to_qdrant
from memlane.store.qdrant.target import QdrantTarget, client_lock, connect, disconnect
from memlane.store.records import ScoredIds
from memlane.store.sqlite.ann_feed import AnnIndexes
from memlane.store.sqlite.db import Database

log = logging.getLogger(__name__)

#: Log rows (or vectors, when rebuilding) sent to Qdrant per request.
BATCH = 1_000
#: The log is pruned once this many of its rows are applied by every mirror.
PRUNE_AFTER = 20_000
_INDEXED = {"user_id": "keyword", "kind": "keyword", "session_id": "keyword", "agent_id": "keyword", "ts": "integer"}


class QdrantMirror(AnnIndexes):
    """Replaces the SQLite store's in-process vector indexes: the same write hooks, a Qdrant collection behind."""

    def __init__(self, db: Database, target: QdrantTarget, collection: str | None = None) -> None:
        super().__init__(db)
        self.target = target
        self._name = collection
        self._mirror_lock = client_lock(target)
        self._client: Any = connect(target)
        self._present: str | None = None  # the collection last seen to exist (saves a request per search)

    # -- identity --------------------------------------------------------------------------------
    def _space(self) -> tuple[str, int, str] | None:
        """(model identity, dim, collection name), or ``None`` while the database holds no model identity."""
        ident = self._identity()  # also gives the database its vector_index_id
        if ident is None:
            return None
        identity, dim = ident
        model, _, db_id = identity.rpartition("|")
        if db_id == "read-only" and self._name is None:
            return None  # opened read-only before any vector was indexed: no collection can hold them yet
        return model, dim, self._name or f"memlane_{db_id}"

    @property
    def collection(self) -> str | None:
        space = self._space()
        return None if space is None else space[2]

    def _head(self) -> int:
        rows = self._db.read("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'")
        return int(rows[0][0]) if rows else 0

    def _applied(self) -> tuple[str, int] | None:
        rows = self._db.read("SELECT identity, seq FROM vector_mirrors WHERE target = ?", (self._key(),))
        return (str(rows[0][0]), int(rows[0][1])) if rows else None

    def _key(self) -> str:
        return f"{self.target.name}#{self._name or ''}"

    # -- keeping Qdrant in step ------------------------------------------------------------------
    def behind(self) -> bool:
        """Whether the log holds changes Qdrant has not been given (one or two indexed reads)."""
        space = self._space()
        if space is None:
            return False
        applied = self._applied()
        return applied is None or applied[0] != f"{space[0]}|{space[1]}" or applied[1] < self._head()

    def sync(self, *, full: bool = False) -> int:
        """Apply the log to Qdrant (or rebuild the collection whole); returns how many points were written or removed.

        Runs in a write transaction of the database, so the log read, the Qdrant writes and the recorded position
        form one step that no other process interleaves with; a failure leaves the position where it was.
        """
        if self._db.read_only or (not full and not self.behind()):
            return 0
        space = self._space()
        if space is None:
            return 0
        identity, dim, name = space
        ident = f"{identity}|{dim}"
        with self._mirror_lock, self._db.atomic() as c:
            row = c.execute("SELECT identity, seq FROM vector_mirrors WHERE target = ?", (self._key(),)).fetchone()
            floor = c.execute("SELECT coalesce(max(seq), 0) FROM vector_log_floor").fetchone()[0]
            head = self._head()
            rebuild = full or row is None or row[0] != ident or int(floor) > int(row[1])
            try:
                if self._ensure_collection(name, dim, recreate=row is not None and row[0] != ident):
                    rebuild = True
                done = self._rebuild(c, name) if rebuild else self._replay(c, name, int(row[1]), head)
            except Exception as e:  # the client raises transport and API errors of several kinds
                self._present = None  # look again next time: the collection may be what went missing
                if isinstance(e, StoreError):
                    raise
                raise StoreError(f"cannot write vectors to {self.target.name}: {e}") from e
            c.execute(
                "INSERT INTO vector_mirrors VALUES (?, ?, ?) ON CONFLICT(target) DO UPDATE SET "
                "identity = excluded.identity, seq = excluded.seq",
                (self._key(), ident, head),
            )
            self._maybe_prune(c)
        if rebuild:
            log.info("Qdrant collection %s rebuilt from %s (%d points)", name, self._db.path, done)
        return done

    def _ensure_collection(self, name: str, dim: int, *, recreate: bool) -> bool:
        """Create the collection if missing (or of another size, or ``recreate``); whether it was created."""
        client = self._client
        if self._present == name and not recreate:
            return False
        self._present = None
        if client.collection_exists(name):
            size = client.get_collection(name).config.params.vectors.size
            if not recreate and size == dim:
                self._present = name
                return False
            client.delete_collection(name)
        client.create_collection(name, vectors_config=qm.VectorParams(size=dim, distance=qm.Distance.COSINE))
        self._present = name
        if self.target.kind == "remote":  # the local mode has no payload indexes
            for field, schema in _INDEXED.items():
                client.create_payload_index(name, field, field_schema=schema, wait=True)
        return True

    def _points(self, rows: Sequence[Any]) -> list[qm.PointStruct]:
        return [
            qm.PointStruct(
                id=int(r[0]), vector=np.frombuffer(r[1], dtype=np.float32).tolist(), payload=payload_of(r[2:])
            )
            for r in rows
        ]

    def _replay(self, c: Any, name: str, start: int, head: int) -> int:
        rows = c.execute(
            f"SELECT l.pk, v.vec, {PAYLOAD_SQL} FROM (SELECT DISTINCT pk FROM vector_log WHERE seq > ? AND seq <= ?) l "
            "LEFT JOIN vectors v ON v.pk = l.pk LEFT JOIN memories m ON m.pk = l.pk ORDER BY l.pk",
            (start, head),
        ).fetchall()
        live = [r for r in rows if r[1] is not None and r[2] is not None]
        gone = [int(r[0]) for r in rows if r[1] is None or r[2] is None]
        for lo in range(0, len(live), BATCH):
            self._client.upsert(name, points=self._points(live[lo : lo + BATCH]), wait=True)
        for lo in range(0, len(gone), BATCH):
            self._client.delete(name, points_selector=qm.PointIdsList(points=gone[lo : lo + BATCH]), wait=True)
        return len(rows)

    def _rebuild(self, c: Any, name: str) -> int:
        cursor = c.execute(
            f"SELECT v.pk, v.vec, {PAYLOAD_SQL} FROM vectors v JOIN memories m ON m.pk = v.pk ORDER BY v.pk"
        )
        held: set[int] = set()
        while batch := cursor.fetchmany(BATCH):
            self._client.upsert(name, points=self._points(batch), wait=True)
            held.update(int(r[0]) for r in batch)
        extra = [pid for pid in self._point_ids(name) if pid not in held]
        for lo in range(0, len(extra), BATCH):
            self._client.delete(name, points_selector=qm.PointIdsList(points=extra[lo : lo + BATCH]), wait=True)
        return len(held) + len(extra)

    def _point_ids(self, name: str) -> list[int]:
        out: list[int] = []
        offset = None
        while True:
            points, offset = self._client.scroll(
                name, limit=BATCH * 4, offset=offset, with_payload=False, with_vectors=False
            )
            out.extend(int(p.id) for p in points)
            if offset is None:
                return out

    def _maybe_prune(self, c: Any) -> None:
        """Drop log rows every mirror has applied, recording per-user floors (an in-process index rebuilds then)."""
        upto = c.execute("SELECT min(seq) FROM vector_mirrors").fetchone()[0]
        if upto is None:
            return
        n = c.execute("SELECT count(*) FROM vector_log WHERE seq <= ?", (upto,)).fetchone()[0]
        if int(n) < PRUNE_AFTER:
            return
        c.execute(
            "INSERT INTO vector_log_floor SELECT user_id, max(seq) FROM vector_log WHERE seq <= ? GROUP BY user_id "
            "ON CONFLICT(user_id) DO UPDATE SET seq = excluded.seq WHERE excluded.seq > vector_log_floor.seq",
            (upto,),
        )
        c.execute("DELETE FROM vector_log WHERE seq <= ?", (upto,))

    def repair(self) -> str:
        """On open: apply what the log holds, then check Qdrant's point count against the database and rebuild
        the collection when they differ. Returns what was done.
        """
        if self._db.read_only:
            return "read-only: not checked"
        applied = self.sync()
        name = self.collection
        if name is None:
            return "no vectors yet"
        try:
            held = self._client.count(name, exact=True).count if self._client.collection_exists(name) else -1
        except Exception as e:  # transport and API errors of several kinds
            raise StoreError(f"cannot reach {self.target.name}: {e}") from e
        want = int(self._db.read("SELECT count(*) FROM vectors")[0][0])
        if held != want:
            log.warning("Qdrant holds %d points, the database %d vectors: rebuilding %s", held, want, name)
            self.sync(full=True)
            return f"rebuilt: Qdrant held {held} points, the database {want} vectors"
        return f"replayed {applied} changes" if applied else "current"

    # -- the write hooks the SQLite store calls after each commit ---------------------------------
    def _after_commit(self) -> None:
        if self._db.conn.in_transaction:  # may still roll back: the next search applies it
            return
        try:
            self.sync()
        except StoreError as e:
            log.warning("vectors not yet in Qdrant (applied at the next write, search or open): %s", e)

    def advance(
        self,
        user_id: str,
        old_version: int,
        new_version: int,
        *,
        add: tuple[Sequence[int], Sequence[str], Vectors] | None = None,
        remove: Sequence[int] = (),
    ) -> None:
        self._after_commit()

    def erased(self, user_id: str) -> None:
        self._after_commit()

    def forget(self, user_id: str) -> None:
        """After a user's data was deleted (their log rows too): remove their points. If this fails or never runs,
        the count check of the next open finds the points and removes them.
        """
        name = self.collection
        if name is None:
            return
        user = qm.Filter(must=[qm.FieldCondition(key="user_id", match=qm.MatchValue(value=user_id))])
        try:
            with self._mirror_lock:
                if self._client.collection_exists(name):
                    self._client.delete(name, points_selector=qm.FilterSelector(filter=user), wait=True)
        except Exception as e:  # transport and API errors of several kinds
            log.warning("points of a deleted user not yet removed from Qdrant (done at the next open): %s", e)

    def sweep(self) -> int:
        return 0  # nothing on local disk; orphaned points are found by ``repair``

    def drop(self, user_id: str | None = None) -> None:
        self._after_commit()  # after a re-embedding switched models: the next sync sees the new identity

    def close(self) -> None:
        disconnect(self.target, self._client)

    # -- reads -----------------------------------------------------------------------------------
    def _local(self) -> contextlib.AbstractContextManager[object]:
        """The local mode's client is plain Python over numpy arrays: reads hold the lock its writes hold."""
        return self._mirror_lock if self.target.kind != "remote" else contextlib.nullcontext()

    def search(self, user_id: str, query: Vectors, limit: int, filters: Filters) -> ScoredIds:
        """The best ``limit`` of the user's memories passing ``filters``, filtered inside Qdrant."""
        name = self.collection
        qfilter = to_qdrant(user_id, filters)
        if name is None or qfilter is None or limit <= 0:
            return []
        self.sync()
        q = np.asarray(query, dtype=np.float32).reshape(-1).tolist()
        try:
            with self._local():
                if self._present != name and not self._client.collection_exists(name):
                    return []
                self._present = name
                found = self._client.query_points(
                    name, query=q, query_filter=qfilter, limit=limit, with_payload=["memory_id"]
                ).points
        except Exception as e:  # transport and API errors of several kinds
            raise StoreError(f"vector search in {self.target.name} failed: {e}") from e
        return [(str(p.payload["memory_id"]), float(p.score)) for p in found]

    def scores(self, user_id: str, query: Vectors, memory_ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of ``query`` to each given memory of the user, from the vectors Qdrant holds."""
        name = self.collection
        if name is None or not memory_ids:
            return {}
        keys = self.keys_of(user_id, list(dict.fromkeys(memory_ids)))
        if not keys:
            return {}
        self.sync()
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        try:
            with self._local():
                points = self._client.retrieve(name, ids=list(keys), with_payload=["user_id"], with_vectors=True)
        except Exception as e:  # transport and API errors of several kinds
            raise StoreError(f"reading vectors from {self.target.name} failed: {e}") from e
        out: dict[str, float] = {}
        for p in points:
            if p.payload.get("user_id") == user_id and int(p.id) in keys:
                out[keys[int(p.id)]] = float(np.asarray(p.vector, dtype=np.float32) @ q)
        return out
