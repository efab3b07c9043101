"""The server's API keys and audit log in the PostgreSQL database of the memory store: every ``memlane serve``
process on that database shares one key set and one audit trail.

The tables (``server_keys``, ``server_audit``) are created by the store's own named migrations (``0010_server_admin``,
under the same advisory lock), so a store opened by the library alone has them too, empty. Keys are stored as
``keys.AdminDB`` stores them: the SHA-256 of the whole key, compared in constant time. The audit log is append-only
(a trigger refuses ``UPDATE`` and ``DELETE``), and its lines are numbered in commit order: each is written under a
transaction-level advisory lock, so ``seq`` is drawn and committed before the next line draws its own, and a reader
paging with ``after`` never skips a line that commits late.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memlane.errors import NotFoundError
from memlane.server.keys import (
    KEY_RE,
    ApiKey,
    AuditEntry,
    NewKey,
    bare_prefix,
    matches,
    mint_key,
    scopes_of,
    scopes_text,
)
from memlane.store.postgres.db import EF_SEARCH_OPTION, POOL_OPTION, Database, redact

#: The advisory lock that orders audit lines by commit (distinct from the migrations' lock).
AUDIT_LOCK: Final = 0x4D4C4155
#: Connections of the key database per process: key checks are one indexed read, audit lines one insert.
POOL_SIZE: Final = 4
_KEY_COLUMNS = "prefix, hash, tenant, scopes, name, created_at, revoked_at"
_AUDIT_COLUMNS = "seq, at, key_prefix, tenant, action, user_id, target, status, detail"


def _conninfo(url: str) -> str:
    """The libpq URL without the options memlane reads itself (they tune the memory store's pool)."""
    parts = urlsplit(url)
    options = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in (POOL_OPTION, EF_SEARCH_OPTION)
    ]
    return urlunsplit(parts._replace(query=urlencode(options)))


def _key(row: Sequence[Any]) -> ApiKey:
    prefix, _, tenant, scopes, name, created_at, revoked_at = row
    return ApiKey(
        prefix, tenant, scopes_of(scopes), name, _utc(created_at), None if revoked_at is None else _utc(revoked_at)
    )


def _utc(at: datetime) -> datetime:
    return at.astimezone(UTC)


class PostgresAdminDB:
    """Keys and audit log in the tables ``server_keys`` and ``server_audit`` of a memlane PostgreSQL database."""

    def __init__(self, url: str) -> None:
        self._db = Database(_conninfo(url), location=redact(url), pool_size=POOL_SIZE)

    def close(self) -> None:
        self._db.close()

    # -- keys --------------------------------------------------------------------------------------
    def create_key(self, tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> NewKey:
        new, digest = mint_key(tenant, scopes, name)
        with self._db.atomic(unseen=True) as conn:
            self._insert(conn, new.key, digest)
        return new

    def bootstrap_key(self, tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> NewKey | None:
        new, digest = mint_key(tenant, scopes, name)
        with self._db.atomic(unseen=True) as conn:
            # Servers starting at once on an empty database queue here: the first creates the key, the rest see it.
            conn.execute("LOCK TABLE server_keys IN SHARE ROW EXCLUSIVE MODE")
            if conn.execute("SELECT 1 FROM server_keys LIMIT 1").fetchone() is not None:
                return None
            self._insert(conn, new.key, digest)
        return new

    @staticmethod
    def _insert(conn: Any, key: ApiKey, digest: str) -> None:
        conn.execute(
            "INSERT INTO server_keys (prefix, hash, tenant, scopes, name, created_at) VALUES (%s, %s, %s, %s, %s, %s)",
            (key.prefix, digest, key.tenant, scopes_text(key.scopes), key.name, key.created_at),
        )

    def list_keys(self) -> list[ApiKey]:
        rows = self._db.read(f"SELECT {_KEY_COLUMNS} FROM server_keys ORDER BY created_at, prefix")
        return [_key(r) for r in rows]

    def count_keys(self) -> int:
        return int(self._db.read("SELECT count(*) FROM server_keys")[0][0])

    def revoke(self, prefix: str) -> ApiKey:
        prefix = bare_prefix(prefix)
        with self._db.atomic(unseen=True) as conn:
            conn.execute(
                "UPDATE server_keys SET revoked_at = now() WHERE prefix = %s AND revoked_at IS NULL", (prefix,)
            )
            row = conn.execute(f"SELECT {_KEY_COLUMNS} FROM server_keys WHERE prefix = %s", (prefix,)).fetchone()
        if row is None:
            raise NotFoundError(f"no key with prefix {prefix[:20]!r}")
        return _key(row)

    def verify(self, presented: str) -> ApiKey | None:
        match = KEY_RE.fullmatch(presented)
        if match is None:
            return None
        rows = self._db.read(f"SELECT {_KEY_COLUMNS} FROM server_keys WHERE prefix = %s", (match.group(1),))
        if not rows or not matches(rows[0][1], presented):
            return None
        return _key(rows[0])

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
        with self._db.atomic(unseen=True) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (AUDIT_LOCK,))
            conn.execute(
                "INSERT INTO server_audit (at, key_prefix, tenant, action, user_id, target, status, detail)"
                " VALUES (clock_timestamp(), %s, %s, %s, %s, %s, %s, %s)",
                (key_prefix, tenant, action, user_id, target, status, detail[:500]),
            )

    def audit(self, tenant: str, *, limit: int = 100, after: int = 0, action: str | None = None) -> list[AuditEntry]:
        sql = f"SELECT {_AUDIT_COLUMNS} FROM server_audit WHERE tenant = %s AND seq > %s"
        args: list[object] = [tenant, after]
        if action is not None:
            sql += " AND action = %s"
            args.append(action)
        sql += " ORDER BY seq LIMIT %s"
        args.append(limit)
        return [
            AuditEntry(
                seq=int(seq),
                at=_utc(at),
                key_prefix=key_prefix,
                tenant=row_tenant,
                action=row_action,
                user_id=user_id,
                target=target,
                status=int(status),
                detail=detail,
            )
            for seq, at, key_prefix, row_tenant, row_action, user_id, target, status, detail in self._db.read(sql, args)
        ]
