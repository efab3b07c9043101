"""The SQLite connection: open, configure, migrate, transactions (``atomic``), chunked reads, error translation."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from memlane.errors import CorruptStoreError, SchemaError, StoreError
from memlane.store.sqlite.checkpoint import Checkpointer
from memlane.store.sqlite.schema import APPLICATION_ID, MIGRATIONS
from memlane.store.sqlite.schema_context import DATA_STEPS

log = logging.getLogger(__name__)

T = TypeVar("T")

# Bound parameters per ``IN (...)`` list: well under SQLite's limit (32,766 since 3.32; 999 before).
CHUNK: Final = 500


def chunks(values: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """The distinct ``values`` (first occurrence order) in lists of at most ``size``."""
    distinct = list(dict.fromkeys(values))
    for start in range(0, len(distinct), size):
        yield distinct[start : start + size]


def marks(n: int) -> str:
    """``?, ?, ...``: ``n`` parameter placeholders."""
    return ", ".join("?" * n)


def translate(exc: sqlite3.Error, path: str) -> StoreError:
    """The ``MemlaneError`` for a driver error: locked, damaged, rejected (a constraint), or other."""
    text = str(exc)
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreError(f"{path}: write rejected by the database: {text}")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreError(f"{path} is locked by another writer: {text}")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path} is read-only (open it with sqlite:///PATH?mode=ro to read it): {text}")
    if "vtable constructor failed" in text or "fts5:" in text:
        return CorruptStoreError(
            f"{path}: the full-text index is damaged ({text}); restore the file from a backup, or export what "
            "can be read and import it into a new store"
        )
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return CorruptStoreError(f"{path} is damaged: {text}")
    return StoreError(f"{path}: {text}")


class Database:
    """One connection guarded by a lock (thread-safe); WAL lets other processes read while this one writes."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = str(path)
        self.lock = threading.RLock()
        self._unseen = 0  # this connection's changes made through ``unseen``
        self._pin = threading.local()  # a thread's ``PRAGMA data_version`` held for one search (see ``pinned``)
        self._checkpointer: Checkpointer | None = None
        # A file this process may not write (or an explicit ``?mode=ro``) is opened read-only: reads work,
        # writes raise a StoreError that says so.
        self.read_only = read_only or (
            self.path != ":memory:" and Path(self.path).exists() and not os.access(self.path, os.W_OK)
        )
        if self.path != ":memory:" and not self.read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            if self.read_only:
                if not Path(self.path).exists():
                    raise StoreError(f"cannot open {self.path} read-only: no such file")
                uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
                self.conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            else:
                self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            self._configure()
            self._migrate()
            self._checkpointer = self._background_checkpoints()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if self.read_only or "readonly" in str(exc):
                raise translate(exc, self.path) from exc
            raise CorruptStoreError(f"{self.path} is not a readable memlane database: {exc}") from exc
        except Exception:
            self.conn.close()
            raise

    def _configure(self) -> None:
        c = self.conn
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA busy_timeout = 10000")
        # Deleted rows are overwritten on disk, so erased text (and sealed PII originals) leaves the file; many
        # builds default to this already, some do not.
        c.execute("PRAGMA secure_delete = ON")
        if self.path != ":memory:" and not self.read_only:
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")

    def _background_checkpoints(self) -> Checkpointer | None:
        """A writable file in WAL mode: automatic checkpoints off on this connection, run on a thread instead."""
        if self.path == ":memory:" or self.read_only:
            return None
        c = self.conn
        if str(c.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            return None
        checkpointer = Checkpointer(self.path)
        c.execute("PRAGMA wal_autocheckpoint = 0")
        return checkpointer

    def _migrate(self) -> None:
        c = self.conn
        app_id = c.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app_id != APPLICATION_ID and tables:
            raise CorruptStoreError(f"{self.path} is an SQLite database of another application, not memlane")
        if self.read_only:
            applied = {r[0] for r in c.execute("SELECT name FROM migrations")} if "migrations" in tables else set()
            pending = [name for name, _ in MIGRATIONS if name not in applied]
            if pending:
                raise SchemaError(
                    f"{self.path} needs migrations {pending} but is open read-only; open it once read-write to upgrade"
                )
            return
        with self.lock:
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
                applied = {r[0] for r in c.execute("SELECT name FROM migrations")}
                unknown = applied - {name for name, _ in MIGRATIONS}
                if unknown:
                    raise SchemaError(f"{self.path} has migrations this memlane does not know: {sorted(unknown)}")
                for name, sql in MIGRATIONS:
                    if name in applied:
                        continue
                    log.info("applying migration %s to %s", name, self.path)
                    for statement in _split_sql(sql):
                        c.execute(statement)
                    if name in DATA_STEPS:
                        DATA_STEPS[name](c)
                    c.execute("INSERT INTO migrations VALUES (?, datetime('now'))", (name,))
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            except BaseException:
                c.execute("ROLLBACK")
                raise
            c.execute("COMMIT")

    @contextlib.contextmanager
    def atomic(self, scope: str | None = None) -> Iterator[sqlite3.Connection]:
        """A transaction (a savepoint when nested): all of it commits, or none of it. ``scope`` (the user it
        writes) confines nothing in one SQLite file.

        Driver errors leave as ``StoreError``s (translated once, here); memlane's own errors pass unchanged.
        """
        with self.lock:
            c = self.conn
            nested = c.in_transaction
            name = f"sp{threading.get_ident()}"
            try:
                c.execute(f"SAVEPOINT {name}" if nested else "BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            try:
                yield c
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    c.execute(f"ROLLBACK TO {name}" if nested else "ROLLBACK")
                    if nested:
                        c.execute(f"RELEASE {name}")
                if isinstance(exc, sqlite3.Error):
                    raise translate(exc, self.path) from exc
                raise
            else:
                try:
                    c.execute(f"RELEASE {name}" if nested else "COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        c.execute("ROLLBACK")
                    raise translate(exc, self.path) from exc
                if not nested and self._checkpointer is not None:
                    self._checkpointer.after_commit()

    def truncate_wal(self) -> bool:
        """Copy the write-ahead log into the file and empty it, so that page images written before an erasure
        (which hold the erased text) leave the WAL file now, not at the last close. ``False`` when it could not
        finish (inside a transaction, or another connection still reads an older snapshot): the next erasure,
        checkpoint or close does it then.
        """
        if self.path == ":memory:" or self.read_only:
            return True
        background = self._checkpointer.lock if self._checkpointer is not None else contextlib.nullcontext()
        with self.lock, background:  # not while the background checkpoint runs: the log would be busy
            if self.conn.in_transaction:
                return False
            try:
                busy = int(self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
            except sqlite3.Error as exc:
                log.warning("could not empty the write-ahead log of %s after an erasure: %s", self.path, exc)
                return False
        if busy:
            log.warning("the write-ahead log of %s is still read by another connection; emptied later", self.path)
        return not busy

    def vacuum(self) -> None:
        """Rebuild the file from its live pages (``VACUUM``), then empty the write-ahead log: the file shrinks to
        what it holds, and no free page keeps old content (``secure_delete`` already zeroes what a delete frees;
        this also drops free pages left from before it was on). Writers wait while it runs.
        """
        if self.path == ":memory:":
            return
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only: it cannot be compacted")
        with self.lock:
            if self.conn.in_transaction:
                raise StoreError(f"{self.path}: compact cannot run inside a transaction")
            try:
                self.conn.execute("VACUUM")
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
        self.truncate_wal()

    def reader(self) -> sqlite3.Connection:
        """A connection of its own to the same file, for a long read on another thread (the caller closes it).

        It only reads (``query_only``), and in WAL mode its read transaction holds up neither this connection's
        writes nor its reads. Not for ``:memory:``, whose database only this connection sees.
        """
        if self.path == ":memory:":
            raise StoreError("an in-memory database has no second connection")
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def reading(self, scope: str | None = None) -> Iterator[sqlite3.Connection]:
        """The connection for reads outside a transaction, under the lock, with driver errors translated. ``scope``
        (the user a read is about) confines a server database's reads; one SQLite file has no such confinement.
        """
        with self.lock:
            try:
                yield self.conn
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc

    def read(self, sql: str, params: Sequence[Any] = (), *, scope: str | None = None) -> list[Any]:
        """All rows of one query (``scope``, the user it reads, confines nothing in one SQLite file)."""
        with self.reading() as c:
            return c.execute(sql, params).fetchall()

    def read_in(
        self, sql: str, values: Iterable[Any], before: Sequence[Any] = (), after: Sequence[Any] = ()
    ) -> list[Any]:
        """Rows of ``sql`` whose ``{marks}`` is an ``IN (...)`` list over ``values``, run in chunks.

        ``before`` and ``after`` are the parameters around the list. Duplicate values are asked once.
        """
        out: list[Any] = []
        for chunk in chunks(values):
            out.extend(self.read(sql.replace("{marks}", marks(len(chunk))), (*before, *chunk, *after)))
        return out

    def generation(self) -> tuple[int, int]:
        """A value that changes whenever the database may have changed: another connection's commit moves
        ``PRAGMA data_version``, this connection's writes move its ``total_changes`` (rolled-back ones too).

        One cheap pragma: caches of derived state (the vector indexes) compare it instead of re-reading what they hold.
        """
        version: int | None = getattr(self._pin, "version", None)
        if version is None:
            with self.reading() as c:
                version = int(c.execute("PRAGMA data_version").fetchone()[0])
        return version, self.conn.total_changes - self._unseen

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Within the block this thread sees other connections' commits as of its start: ``generation`` reads
        ``PRAGMA data_version`` once instead of at every cache it consults (a search consults about a dozen).

        This connection's own writes still move ``generation`` at once (``total_changes`` is read every time).
        """
        if getattr(self._pin, "version", None) is not None:  # nested: the outer block's view holds
            yield
            return
        with self.reading() as c:
            self._pin.version = int(c.execute("PRAGMA data_version").fetchone()[0])
        try:
            yield
        finally:
            self._pin.version = None

    @contextlib.contextmanager
    def unseen(self) -> Iterator[sqlite3.Connection]:
        """A transaction whose changes do not move ``generation``: for writes to columns no derived state holds
        (a search's access counts), so that the caches it keeps need not look at the logs again after each search.
        """
        with self.lock:
            before = self.conn.total_changes
            try:
                with self.atomic() as c:
                    yield c
            finally:
                if not self.conn.in_transaction:  # committed or rolled back: either way nothing derived changed
                    self._unseen += self.conn.total_changes - before

    # -- scope versions: every write of a user bumps it, so caches of that user's data see the change -------
    def version(self, user_id: str) -> int:
        rows = self.read("SELECT version FROM scope_versions WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    @staticmethod
    def bump(c: sqlite3.Connection, user_id: str) -> tuple[int, int]:
        """Advance a user's version inside the caller's transaction; returns (old, new)."""
        row = c.execute("SELECT version FROM scope_versions WHERE user_id = ?", (user_id,)).fetchone()
        old = int(row[0]) if row else 0
        c.execute(
            "INSERT INTO scope_versions VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET version = excluded.version",
            (user_id, old + 1),
        )
        return old, old + 1

    def size_bytes(self) -> int:
        if self.path == ":memory:":
            return 0
        base = Path(self.path)
        return sum(p.stat().st_size for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists())

    def close(self) -> None:
        with self.lock:
            if self._checkpointer is not None:  # first: the last connection to close checkpoints the log
                self._checkpointer.close()
                self._checkpointer = None
            self.conn.close()


def _split_sql(script: str) -> list[str]:
    """Split a migration script into statements (a trigger body's semicolons stay inside its statement)."""
    out: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip().rstrip(";").strip())
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending.strip().rstrip(";").strip())
    return out
