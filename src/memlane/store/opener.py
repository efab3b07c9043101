"""Opening a store from a location: the one place that maps a URL scheme to a backend."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from pydantic import ValidationError as PydanticValidationError

from memlane.errors import ConfigError
from memlane.store.base import Store

if TYPE_CHECKING:
    from memlane.store.ann import IndexSettings


def open_store(target: str | Path) -> Store:
    """Open a store from ``":memory:"``, a file path or a ``sqlite:///path`` URL (``?mode=ro``: read-only).

    ``sqlite:///path?vectors=URL`` keeps records and text in the file and the vectors in Qdrant (``memlane[qdrant]``):
    ``qdrant://HOST:PORT`` (``qdrants://`` for HTTPS, ``qdrants://KEY@HOST`` with an API key), ``qdrant+local:///DIR``
    (the embedded local mode), ``qdrant+local`` (its folder beside the file) or ``qdrant+memory``; ``collection=NAME``
    overrides the collection (by default ``memlane_<id of the database>``). The file's own vector index takes
    ``ef_search=N`` (the HNSW beam up to 100,000 vectors, default 512), ``ef_growth=X`` (how it widens past that,
    default 0.7; 0: fixed) and ``graph=bf16|f16|f32`` (the vectors the graph walks; see ``IndexSettings``).
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
            unknown = sorted(set(options) - {"mode", "vectors", "collection", *_INDEX_OPTIONS})
            if unknown or options.get("mode", "rw") not in ("ro", "rw"):
                raise ConfigError(
                    f"unsupported sqlite URL options in {text!r}; supported: ?mode=ro or ?mode=rw, "
                    "vectors=qdrant://HOST:PORT (or qdrant+local:///PATH, qdrant+local, qdrant+memory), collection=NAME, "
                    "ef_search=N, ef_growth=X, graph=bf16|f16|f32"
                )
            read_only = options.get("mode") == "ro"
            if "vectors" in options:
                if set(options) & set(_INDEX_OPTIONS):
                    raise ConfigError(
                        f"{text!r}: ef_search, ef_growth and graph set the file's own vector index; with vectors= "
                        "the vectors are searched in Qdrant"
                    )
                from memlane.store.qdrant import open_qdrant_store

                return open_qdrant_store(
                    location or ":memory:",
                    options["vectors"],
                    collection=options.get("collection"),
                    read_only=read_only,
                )
            if "collection" in options:
                raise ConfigError(f"{text!r}: collection= names a Qdrant collection and needs vectors=qdrant://...")
            settings = _index_settings(text, options)
            return SQLiteStore(location or ":memory:", read_only=read_only, index_settings=settings)
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


#: URL options of a SQLite store's own vector index, and the ``IndexSettings`` field each sets.
_INDEX_OPTIONS = {"ef_search": "expansion_search", "ef_growth": "expansion_growth", "graph": "graph_dtype"}


def _index_settings(url: str, options: dict[str, str]) -> IndexSettings | None:
    """The vector index settings the URL's options ask for (``None``: none asked, the defaults)."""
    from memlane.store.ann import IndexSettings

    asked = {field: options[name] for name, field in _INDEX_OPTIONS.items() if name in options}
    if not asked:
        return None
    try:
        return IndexSettings.model_validate(asked)
    except PydanticValidationError as e:
        option = {field: name for name, field in _INDEX_OPTIONS.items()}
        problems = "; ".join(f"{option.get(str(err['loc'][0]), err['loc'][0])}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"bad vector index options in {url!r}: {problems}") from e
