"""Opening a store from a location: the one place that maps a URL scheme to a backend."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from memlane.errors import ConfigError
from memlane.store.base import Store


def open_store(target: str | Path) -> Store:
    """Open a store from ``":memory:"``, a file path or a ``sqlite:///path`` URL (``?mode=ro``: read-only).

    ``sqlite:///path?vectors=URL`` keeps records and text in the file and the vectors in Qdrant (``memlane[qdrant]``):
    ``qdrant://HOST:PORT`` (``qdrants://`` for HTTPS, ``qdrants://KEY@HOST`` with an API key), ``qdrant+local:///DIR``
    (the embedded local mode), ``qdrant+local`` (its folder beside the file) or ``qdrant+memory``; ``collection=NAME``
    overrides the collection (by default ``memlane_<id of the database>``).
    """
    # Imported here, not at the top: a backend's driver is loaded only when a store of that kind is opened.
    from memlane.store.sqlite import SQLiteStore

    text = str(target)
    if text == ":memory:":
        return SQLiteStore(":memory:")
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme == "sqlite":
            location, _, query = rest.partition("?")
            options = {unquote(k): unquote(v) for k, _, v in (p.partition("=") for p in query.split("&") if p)}
            unknown = sorted(set(options) - {"mode", "vectors", "collection"})
            if unknown or options.get("mode", "rw") not in ("ro", "rw"):
                raise ConfigError(
                    f"unsupported sqlite URL options in {text!r}; supported: ?mode=ro or ?mode=rw, "
                    "vectors=qdrant://HOST:PORT (or qdrant+local:///PATH, qdrant+local, qdrant+memory), collection=NAME"
                )
            read_only = options.get("mode") == "ro"
            if "vectors" in options:
                from memlane.store.qdrant import open_qdrant_store

                return open_qdrant_store(
                    location or ":memory:",
                    options["vectors"],
                    collection=options.get("collection"),
                    read_only=read_only,
                )
            if "collection" in options:
                raise ConfigError(f"{text!r}: collection= names a Qdrant collection and needs vectors=qdrant://...")
            return SQLiteStore(location or ":memory:", read_only=read_only)
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
