"""Where the server keeps its API keys and audit log: the protocol every implementation follows, and the choice.

On a PostgreSQL memory store the keys and the audit log live in that same database (``admin_pg``), so any number of
``memlane serve`` processes on it share one key set and one audit trail. On any other store they live in
``server.db`` beside it (``keys.AdminDB``, SQLite), which one process (or several on one machine, through SQLite's
locking) uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from memlane.errors import ConfigError
from memlane.server.keys import AdminDB, ApiKey, AuditEntry, NewKey

#: The file of the embedded key database in the data dir.
ADMIN_DB_NAME = "server.db"


@runtime_checkable
class AdminStore(Protocol):
    """API keys (only their hashes stored) and the append-only audit log. Thread-safe."""

    def close(self) -> None: ...

    def create_key(self, tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> NewKey:
        """A new key; ``ValidationError`` for a bad tenant, scope or name."""
        ...

    def bootstrap_key(self, tenant: str | None, scopes: Sequence[str] | str, name: str = "") -> NewKey | None:
        """A new key only when none exists yet (checked and created atomically, whoever else starts at once)."""
        ...

    def list_keys(self) -> list[ApiKey]: ...

    def count_keys(self) -> int: ...

    def revoke(self, prefix: str) -> ApiKey:
        """Revoke by prefix; ``NotFoundError`` if there is no such key. Revoking twice keeps the first time."""
        ...

    def verify(self, presented: str) -> ApiKey | None:
        """The key ``presented`` names if its secret matches (revoked or not); ``None`` otherwise."""
        ...

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
        ...

    def audit(self, tenant: str, *, limit: int = 100, after: int = 0, action: str | None = None) -> list[AuditEntry]:
        """A tenant's lines with ``seq`` above ``after``, in ``seq`` order (which is commit order)."""
        ...


def is_postgres(store: str | Path | None) -> bool:
    """Whether a store location names a PostgreSQL database."""
    return isinstance(store, str) and store.partition("://")[0] in ("postgresql", "postgres")


def open_admin_store(data_dir: Path, store: str | Path | None) -> AdminStore:
    """The key database for a server on ``store``: in the store's own database for PostgreSQL, else ``server.db``
    in ``data_dir``.
    """
    if is_postgres(store):
        assert isinstance(store, str)
        try:
            from memlane.server.admin_pg import PostgresAdminDB
        except ImportError as exc:
            raise ConfigError(
                f"keys on a postgresql:// store need the postgres extra: pip install 'memlane[postgres]' ({exc})"
            ) from exc

        return PostgresAdminDB(store)
    return AdminDB(data_dir / ADMIN_DB_NAME)
