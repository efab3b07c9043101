"""Vectors in Qdrant (``memlane[qdrant]``) beside records and text in SQLite: ``sqlite:///PATH?vectors=qdrant://HOST``."""

from __future__ import annotations

from pathlib import Path

from memlane.store.base import Store
from memlane.store.qdrant.target import QdrantTarget, parse_target


def open_qdrant_store(path: Path | str, vectors: str, *, collection: str | None, read_only: bool) -> Store:
    """An SQLite store whose vectors live in the Qdrant that ``vectors`` names (the driver is imported only here)."""
    target = parse_target(vectors, str(path))
    try:
        import qdrant_client  # noqa: F401
    except ImportError as e:
        from memlane.errors import MissingDependencyError

        raise MissingDependencyError("vectors in Qdrant", "qdrant") from e
    from memlane.store.qdrant.store import SQLiteQdrantStore

    return SQLiteQdrantStore(path, target, collection=collection, read_only=read_only)


__all__ = ["QdrantTarget", "open_qdrant_store", "parse_target"]
