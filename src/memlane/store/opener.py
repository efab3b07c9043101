"""Opening a store from a location: the one place that maps a URL scheme to a backend."""

from __future__ import annotations

from pathlib import Path

from memlane.errors import ConfigError
from memlane.store.base import Store


def open_store(target: str | Path) -> Store:
    """Open a store from ``":memory:"``, a file path or a ``sqlite:///path`` URL (``?mode=ro``: read-only)."""
    # Imported here, not at the top: a backend's driver is loaded only when a store of that kind is opened.
    from memlane.store.sqlite import SQLiteStore

    text = str(target)
    if text == ":memory:":
        return SQLiteStore(":memory:")
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme == "sqlite":
            location, _, query = rest.partition("?")
            options = dict(part.partition("=")[::2] for part in query.split("&") if part)
            unknown = sorted(set(options) - {"mode"})
            if unknown or options.get("mode", "rw") not in ("ro", "rw"):
                raise ConfigError(f"unsupported sqlite URL options in {text!r}; supported: ?mode=ro or ?mode=rw")
            return SQLiteStore(location or ":memory:", read_only=options.get("mode") == "ro")
        if scheme in ("postgresql", "postgres"):
            return _open_postgres(text)
        raise ConfigError(
            f"unsupported store URL scheme {scheme!r}; supported: sqlite:///path, postgresql://..., a file path, ':memory:'"
        )
    return SQLiteStore(Path(text))


def _open_postgres(url: str) -> Store:
    """A ``PostgresStore`` (``memlane[postgres]``), or a ``ConfigError`` naming the extra when it is not installed."""
    try:
        from memlane.store.postgres import PostgresStore
    except ImportError as exc:
        raise ConfigError(
            f"a postgresql:// store needs the postgres extra: pip install 'memlane[postgres]' ({exc})"
        ) from exc
    return PostgresStore(url)
