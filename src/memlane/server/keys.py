"""API keys and the audit log of the server: the records, and ``AdminDB``, the embedded implementation in one small
SQLite file of its own (``server.db`` in the data dir). On a PostgreSQL store the same records live in that database
(``memlane.server.admin_pg``), so that every ``memlane serve`` process on it shares them; ``memlane.server.admin_store``
holds the protocol both implement and picks one.

A key is ``ml_<prefix>_<secret>``: the 12-hex-digit prefix is its public name (shown in lists and the audit log),
the secret 256 random bits. Only the SHA-256 of the whole key is stored. A slow password hash (argon2, bcrypt) exists
to make guessing low-entropy passwords expensive; a 256-bit random secret cannot be guessed at any speed, so a fast
hash loses nothing and keeps the check on every request to microseconds. Hashes are compared in constant time.

With SQLite the keys live apart from the memory store so that the store stays a plain memlane file (copied, exported
or opened by the library without the server); on any backend a store's export never carries credentials.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from memlane.errors import NotFoundError, StoreError, ValidationError
from memlane.scope import check_tenant

KEY_RE = re.compile(r"ml_([0-9a-f]{12})_([0-9a-f]{64})")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    prefix TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    tenant TEXT NOT NULL,
    scopes TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    key_prefix TEXT,
    tenant TEXT NOT NULL,
    action TEXT NOT NULL,
    user_id TEXT,
    target TEXT,
    status INTEGER NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_tenant ON audit(tenant, seq);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""


class Scope(StrEnum):
    """What a key may do: ``read`` memories, ``write`` them, or ``admin`` (audit log, metrics, whole-tenant export)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


@dataclass(frozen=True)
class ApiKey:
    """A stored key, without its secret."""

    prefix: str
    tenant: str
    scopes: frozenset[Scope]
    name: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@dataclass(frozen=True)
class NewKey:
    """A key just created: ``secret`` is the whole ``ml_..._...`` string, shown once and never stored."""

    key: ApiKey
    secret: str


@dataclass(frozen=True)
class AuditEntry:
    """One line of the audit log."""

    seq: int
    at: datetime
    key_prefix: str | None
    tenant: str
    action: str
    user_id: str | None
    target: str | None
    status: int
    detail: str


def parse_scopes(scopes: Sequence[str] | str) -> frozenset[Scope]:
    """Scopes from names (a list or a comma-separated string); ``ValidationError`` for an unknown one."""
    names = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    out: set[Scope] = set()
    for name in (n.strip() for n in names):
        try:
            out.add(Scope(name))
        except ValueError:
            raise ValidationError(f"unknown scope {name[:40]!r}; choose from read, write, admin") from None
    if not out:
        raise ValidationError("a key needs at least one scope (read, write, admin)")
    return frozenset(out)


def key_hash(secret: str) -> str:
    """The stored form of a key: the hex SHA-256 of the whole key string."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def mint_key(tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> tuple[NewKey, str]:
    """A new key (checked tenant, scopes and name) and the hash to store; nothing is stored yet."""
    tenant = check_tenant(tenant)
    chosen = parse_scopes(scopes)
    if not isinstance(name, str) or len(name) > 200 or any(ord(c) < 32 for c in name):
        raise ValidationError("a key's name must be at most 200 printable characters")
    prefix, secret = secrets.token_hex(6), secrets.token_hex(32)
    full = f"ml_{prefix}_{secret}"
    return NewKey(ApiKey(prefix, tenant, chosen, name, _now(), None), full), key_hash(full)


def bare_prefix(prefix: str) -> str:
    """A key's prefix from ``ml_<prefix>``, the bare prefix, or the whole key."""
    return prefix.removeprefix("ml_").split("_")[0]


def scopes_text(scopes: frozenset[Scope]) -> str:
    """The stored form of a key's scopes."""
    return ",".join(sorted(scopes))


def scopes_of(text: str) -> frozenset[Scope]:
    """A key's scopes from their stored form."""
    return frozenset(Scope(s) for s in text.split(","))


def matches(stored_hash: str, presented: str) -> bool:
    """Whether ``presented`` is the key whose stored hash is ``stored_hash`` (compared in constant time)."""
    return hmac.compare_digest(stored_hash, key_hash(presented))


def _key(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        prefix=row["prefix"],
        tenant=row["tenant"],
        scopes=scopes_of(row["scopes"]),
        name=row["name"],
        created_at=datetime.fromisoformat(row["created_at"]),
        revoked_at=datetime.fromisoformat(row["revoked_at"]) if row["revoked_at"] else None,
    )


class AdminDB:
    """Keys and audit log over one SQLite connection, shared by the server's threads under a lock."""

    def __init__(self, path: Path | str) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the key database {str(path)[:200]!r}: {exc}") from exc
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"key database: {exc}") from exc

    # -- keys --------------------------------------------------------------------------------------
    def create_key(self, tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> NewKey:
        """A new key for ``tenant`` with ``scopes``; the returned secret is the only copy there will be."""
        new, digest = mint_key(tenant, scopes, name)
        with self._tx() as db:
            self._insert(db, new.key, digest)
        return new

    def bootstrap_key(self, tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> NewKey | None:
        """A new key, only if there is no key at all (checked and created in one transaction); else ``None``."""
        new, digest = mint_key(tenant, scopes, name)
        with self._tx() as db:
            if db.execute("SELECT 1 FROM api_keys LIMIT 1").fetchone() is not None:
                return None
            self._insert(db, new.key, digest)
        return new

    @staticmethod
    def _insert(db: sqlite3.Connection, key: ApiKey, digest: str) -> None:
        db.execute(
            "INSERT INTO api_keys(prefix, hash, tenant, scopes, name, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key.prefix, digest, key.tenant, scopes_text(key.scopes), key.name, key.created_at.isoformat()),
        )

    def list_keys(self) -> list[ApiKey]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM api_keys ORDER BY created_at, prefix").fetchall()
        return [_key(r) for r in rows]

    def count_keys(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM api_keys").fetchone()[0])

    def revoke(self, prefix: str) -> ApiKey:
        """Revoke a key by its prefix (``ml_<prefix>`` or the bare prefix); ``NotFoundError`` if there is none."""
        prefix = bare_prefix(prefix)
        with self._tx() as db:
            db.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL",
                (_now().isoformat(), prefix),
            )
            row = db.execute("SELECT * FROM api_keys WHERE prefix = ?", (prefix,)).fetchone()
        if row is None:
            raise NotFoundError(f"no key with prefix {prefix[:20]!r}")
        return _key(row)

    def verify(self, presented: str) -> ApiKey | None:
        """The key ``presented`` names if its secret matches (revoked or not); ``None`` otherwise."""
        match = KEY_RE.fullmatch(presented)
        if match is None:
            return None
        with self._lock:
            row = self._db.execute("SELECT * FROM api_keys WHERE prefix = ?", (match.group(1),)).fetchone()
        if row is None or not matches(row["hash"], presented):
            return None
        return _key(row)

    # -- audit -------------------------------------------------------------------------------------
    def record(
        self,
        *,
        key_prefix: str | None,
        tenant: str,
        action: str,
        status: int,
        user_id: str | None = None,
        target: str | None = None,
        detail: str = "",
    ) -> None:
        """Append one line to the audit log."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO audit(at, key_prefix, tenant, action, user_id, target, status, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (_now().isoformat(), key_prefix, tenant, action, user_id, target, status, detail[:500]),
            )

    def audit(self, tenant: str, *, limit: int = 100, after: int = 0, action: str | None = None) -> list[AuditEntry]:
        """A tenant's audit lines with ``seq`` greater than ``after``, oldest first."""
        sql = "SELECT * FROM audit WHERE tenant = ? AND seq > ?"
        args: list[object] = [tenant, after]
        if action is not None:
            sql += " AND action = ?"
            args.append(action)
        sql += " ORDER BY seq LIMIT ?"
        args.append(limit)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [
            AuditEntry(
                seq=r["seq"],
                at=datetime.fromisoformat(r["at"]),
                key_prefix=r["key_prefix"],
                tenant=r["tenant"],
                action=r["action"],
                user_id=r["user_id"],
                target=r["target"],
                status=r["status"],
                detail=r["detail"],
            )
            for r in rows
        ]


def describe(key: ApiKey) -> str:
    """One line for a key list."""
    state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "active"
    scopes = ",".join(sorted(key.scopes))
    return json.dumps(
        {"prefix": f"ml_{key.prefix}", "tenant": key.tenant, "scopes": scopes, "name": key.name, "state": state}
    )
