"""Opening a store from a location: the one place that maps a URL scheme to a backend."""

from __future__ import annotations

from pathlib import Path

from memlane.errors import ConfigError
from memlane.store.base import Store


def open_store(target: str | Path) -> Store:
    """Open a store from ``":memory:"``, a file path or a ``sqlite:///path`` URL."""
    # Imported here, not at the top: a backend's driver is loaded only when a store of that kind is opened.
    from memlane.store.sqlite import SQLiteStore

    text = str(target)
    if text == ":memory:":
        return SQLiteStore(":memory:")
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme == "sqlite":
            return SQLiteStore(rest or ":memory:")
        raise ConfigError(
            f"unsupported store URL scheme {scheme!r}; supported: sqlite:///path, a file path, ':memory:'"
        )
    return SQLiteStore(Path(text))
