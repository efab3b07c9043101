"""The PostgreSQL connection pool: open, migrate (under an advisory lock), transactions (``atomic``), reads, and
driver errors translated to ``StoreError`` in one place.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final

import psycopg
import psycopg.sql
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from memlane.errors import SchemaError, StoreError
from memlane.store.postgres.schema import MIGRATION_LOCK, MIGRATIONS
from memlane.store.postgres.schema_context import DATA_STEPS

log = logging.getLogger(__name__)

# Options of a ``postgresql://`` URL that memlane reads itself (the rest go to libpq unchanged).
POOL_OPTION: Final = "pool_size"
EF_SEARCH_OPTION: Final = "ef_search"


def translate(exc: psycopg.Error, where: str) -> StoreError:
    """The ``MemlaneError`` for a driver error: rejected (a constraint), unreachable, read-only, or other."""
    text = str(exc).strip()
    if isinstance(exc, psycopg.errors.IntegrityError):
        return StoreError(f"{where}: write rejected by the database: {text}")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError(f"{where} is read-only: {text}")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"{where}: the database cannot be reached: {text}")
    return StoreError(f"{where}: {text}")


def redact(url: str) -> str:
    """A connection URL without its password (for messages and ``location``)."""
    scheme, sep, rest = url.partition("://")
    auth, at, host = rest.rpartition("@")
    if not at or ":" not in auth:
        return url
    return f"{scheme}{sep}{auth.split(':', 1)[0]}:***@{host}"


class _Commits:
    """Commits of memlane transactions in this process (any ``Database``): the read models' cheap "anything new?"."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def bump(self) -> None:
        with self._lock:
            self.count += 1


COMMITS: Final = _Commits()


def _confine(conn: psycopg.Connection[Any], scope: str | None) -> None:
    """Row-level security for the rest of this transaction: only rows of user ``scope`` (defence in depth: every
    query names its user anyway). Enforced for roles that are not superusers and do not bypass it.
    """
    if scope is not None:
        conn.execute("SELECT set_config('memlane.scope', %s, true)", (scope,))


def owned_tables() -> tuple[str, ...]:
    """The tables the migrations create and do not drop again, in creation order: what memlane owns (and rewrites
    in ``compact``), never another table of the same schema.
    """
    sql = "\n".join(body for _, body in MIGRATIONS)
    made = re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", sql)
    dropped = set(re.findall(r"DROP TABLE (?:IF EXISTS )?(\w+)", sql))
    return tuple(dict.fromkeys(t for t in made if t not in dropped))


class Database:
    """A pool of connections; each thread's transaction holds one connection until it ends."""

    def __init__(self, conninfo: str, *, location: str, pool_size: int = 4, ef_search: int = 100) -> None:
        self.location = location
        self.ef_search = ef_search
        self._local = threading.local()
        #: Queries sent through ``read`` (each one or more round trips), for benchmarks counting a search's reads.
        self.reads = 0
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                self._migrate(conn)
        except psycopg.Error as exc:
            raise translate(exc, location) from exc
        self.pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max(1, pool_size),
            # Autocommit: a read outside a transaction is one round trip (no BEGIN and COMMIT around it).
            kwargs={"autocommit": True},
            configure=self._configure,
            open=False,
            name="memlane",
        )
        try:
            self.pool.open(wait=True, timeout=30)
        except Exception as exc:
            self.pool.close()
            raise StoreError(f"{location}: cannot open a connection pool: {exc}") from exc

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)
        # An index scan of HNSW goes on past ``ef_search`` candidates until the filters (the user above all)
        # leave enough rows, in exact distance order (pgvector's iterative scans).
        conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        try:
            conn.execute("SET hnsw.iterative_scan = strict_order")
        except psycopg.errors.UndefinedObject:  # pgvector before 0.8: a filtered search may come back short
            log.warning("%s: pgvector before 0.8 has no iterative index scans; upgrade it", self.location)

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Apply the pending migrations; processes starting at once queue on one advisory lock."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            # Created only when missing: a role without CREATE rights may use a schema an administrator made.
            found = conn.execute("SELECT to_regclass('migrations')").fetchone()
            if found is None or found[0] is None:
                conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)")
            applied = {str(r[0]) for r in conn.execute("SELECT name FROM migrations").fetchall()}
            unknown = applied - {name for name, _ in MIGRATIONS}
            if unknown:
                raise SchemaError(f"{self.location} has migrations this memlane does not know: {sorted(unknown)}")
            for name, sql in MIGRATIONS:
                if name in applied:
                    continue
                log.info("applying migration %s to %s", name, self.location)
                if sql.strip():
                    conn.execute(sql.encode())  # several statements: the simple query protocol (no parameters)
                if name in DATA_STEPS:
                    DATA_STEPS[name](conn)
                conn.execute("INSERT INTO migrations VALUES (%s, now())", (name,))

    def in_transaction(self) -> bool:
        """Whether this thread is inside a transaction of this database."""
        return getattr(self._local, "conn", None) is not None

    @contextlib.contextmanager
    def atomic(self, scope: str | None = None, *, unseen: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A transaction (a savepoint when nested in this thread's): all of it commits, or none of it.

        With ``scope`` (a user id) row-level security confines the transaction to that user's rows. Driver errors
        leave as ``StoreError``s (translated once, here); memlane's own errors pass unchanged. ``unseen``: the
        transaction changes nothing a read model holds (access counts), so its commit need not make models check.
        """
        held: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        try:
            if held is not None:
                with held.transaction():
                    yield held
                return
            with self.pool.connection() as conn, conn.transaction():
                self._local.conn = conn
                try:
                    _confine(conn, scope)
                    yield conn
                finally:
                    self._local.conn = None
            if not unseen:
                COMMITS.bump()
        except psycopg.Error as exc:
            raise translate(exc, self.location) from exc

    @contextlib.contextmanager
    def reading(self, scope: str | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A connection for reads (this thread's transaction's, if one is open; else one transaction confined to
        ``scope`` when given), driver errors translated.
        """
        held: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        try:
            if held is not None:
                yield held
                return
            with self.pool.connection() as conn:
                if scope is None:
                    yield conn
                    return
                # BEGIN, the confinement and the query leave in one round trip (a pipeline), COMMIT in another.
                with conn.pipeline(), conn.transaction():
                    _confine(conn, scope)
                    yield conn
        except psycopg.Error as exc:
            raise translate(exc, self.location) from exc

    def read(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *, scope: str | None = None) -> list[Any]:
        """All rows of one query (confined to the user ``scope`` by row-level security when given)."""
        self.reads += 1
        if scope is None or getattr(self._local, "conn", None) is not None:
            with self.reading(scope) as c:
                return c.execute(sql.encode(), params).fetchall()
        # One round trip: the confinement and the query leave together, ended by one Sync. Statements between two
        # Syncs form one implicit transaction, so the confinement (local to the transaction) holds for the query and
        # ends with it. (A BEGIN ... COMMIT around them took five round trips.)
        try:
            with self.pool.connection() as conn:
                with conn.pipeline():
                    _confine(conn, scope)
                    cur = conn.execute(sql.encode(), params)
                return cur.fetchall()
        except psycopg.Error as exc:
            raise translate(exc, self.location) from exc

    def size_bytes(self) -> int:
        return int(self.read("SELECT pg_database_size(current_database())")[0][0])

    def compact(self, tables: Sequence[str]) -> tuple[list[str], list[str]]:
        """``VACUUM FULL`` each of ``tables`` that exists, then a checkpoint: (the tables rewritten, notes).

        A delete in PostgreSQL leaves the row's old version in the table's pages and its entries in the indexes
        (the text search index holds the words) until the space is reused; a plain ``VACUUM`` marks it free but
        does not overwrite it. ``VACUUM FULL`` writes each table and its indexes anew from the live rows, so no
        byte of a deleted memory stays in the data files. Each table is locked (reads and writes wait) while it is
        rewritten. The checkpoint lets the server recycle write-ahead log segments sooner; the log itself (and any
        archive, replica or backup of it) keeps past changes for its retention, which only the server's settings
        govern.
        """
        if self.in_transaction():
            raise StoreError(f"{self.location}: compact cannot run inside a transaction")
        done: list[str] = []
        notes: list[str] = []
        try:
            with self.pool.connection() as conn:  # autocommit: VACUUM runs outside any transaction block
                for table in tables:
                    found = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
                    if found is None or found[0] is None:
                        continue
                    conn.execute(psycopg.sql.SQL("VACUUM (FULL, ANALYZE) {}").format(psycopg.sql.Identifier(table)))
                    done.append(table)
                try:
                    conn.execute("CHECKPOINT")
                except psycopg.errors.InsufficientPrivilege:
                    notes.append(
                        "no CHECKPOINT: the role may not run one (PostgreSQL 15+: grant pg_checkpoint); the server's "
                        "next checkpoint recycles the write-ahead log"
                    )
        except psycopg.Error as exc:
            raise translate(exc, self.location) from exc
        notes.append("the write-ahead log, its archive, replicas and backups keep past changes for their own retention")
        return done, notes

    def close(self) -> None:
        self.pool.close()
