"""Where the Qdrant vectors live: the ``vectors=`` URL parsed into a typed target, and the client it opens.

Forms (see ``docs/deploy.md``):

- ``qdrant://HOST[:PORT]`` a server or cluster over HTTP (port 6333 by default), ``qdrants://`` over HTTPS; an API key
  goes in the user part: ``qdrants://KEY@HOST``;
- ``qdrant+local:///ABS/PATH`` Qdrant's local (embedded, one process) mode persisted in a folder;
  ``qdrant+local`` alone puts that folder beside the SQLite file (``<db>.qdrant``);
- ``qdrant+memory`` local mode in memory (tests).

The local mode allows one client per folder in a process (it locks the folder); the clients are shared here by folder,
so two stores of one process on the same folder work, and another process gets a clear ``StoreError``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from memlane.errors import ConfigError, MissingDependencyError, StoreError

Kind = Literal["remote", "local", "memory"]

_LOCK = threading.Lock()
_LOCAL: dict[str, tuple[Any, int]] = {}  # resolved folder -> (client, users)
_CLIENT_LOCKS: dict[str, threading.RLock] = {}


@dataclass(frozen=True, slots=True)
class QdrantTarget:
    """One Qdrant deployment: a server (``url``), a local-mode folder (``path``) or local mode in memory."""

    kind: Kind
    url: str | None = None
    path: str | None = None
    api_key: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """How the target is named in logs and in the database's mirror table (never the API key)."""
        if self.kind == "remote":
            return f"qdrant:{self.url}"
        if self.kind == "local":
            return f"qdrant+local:{self.path}"
        return "qdrant+memory"


def parse_target(text: str, db_path: str) -> QdrantTarget:
    """The target of a ``vectors=`` option; ``db_path`` places ``qdrant+local`` given without a folder."""
    if text in ("qdrant+memory", "qdrant+memory://", "qdrant+local://:memory:"):
        return QdrantTarget("memory")
    if text in ("qdrant+local", "qdrant+local://"):
        if db_path == ":memory:":
            return QdrantTarget("memory")
        return QdrantTarget("local", path=str(Path(db_path + ".qdrant").resolve()))
    parts = urlsplit(text)
    if parts.scheme == "qdrant+local":
        folder = unquote(parts.netloc + parts.path)
        if not folder:
            raise ConfigError(f"{text!r} names no folder: use qdrant+local:///ABS/PATH or qdrant+local")
        return QdrantTarget("local", path=str(Path(folder).expanduser().resolve()))
    if parts.scheme in ("qdrant", "qdrants"):
        if not parts.hostname:
            raise ConfigError(f"{text!r} names no host: use qdrant://HOST:6333")
        try:
            port = parts.port or 6333
        except ValueError as e:
            raise ConfigError(f"{text!r} has a bad port: {e}") from e
        scheme = "https" if parts.scheme == "qdrants" else "http"
        key = unquote(parts.username) if parts.username else None
        return QdrantTarget("remote", url=f"{scheme}://{parts.hostname}:{port}", api_key=key)
    raise ConfigError(
        f"unsupported vectors URL {text!r}; supported: qdrant://HOST:PORT, qdrants://[KEY@]HOST:PORT, "
        "qdrant+local:///PATH, qdrant+local, qdrant+memory"
    )


def _client_class() -> Any:
    try:
        from qdrant_client import QdrantClient
    except ImportError as e:
        raise MissingDependencyError("vectors in Qdrant", "qdrant") from e
    return QdrantClient


def connect(target: QdrantTarget) -> Any:
    """A ``QdrantClient`` for the target (a local folder's client is shared within the process)."""
    client_class = _client_class()
    if target.kind == "memory":
        return client_class(location=":memory:")
    if target.kind == "remote":
        return client_class(url=target.url, api_key=target.api_key, timeout=30)
    assert target.path is not None
    with _LOCK:
        held = _LOCAL.get(target.path)
        if held is not None:
            _LOCAL[target.path] = (held[0], held[1] + 1)
            return held[0]
        try:
            client = client_class(path=target.path)
        except RuntimeError as e:  # the folder is locked by another process
            raise StoreError(f"cannot open the Qdrant folder {target.path}: {e}") from e
        _LOCAL[target.path] = (client, 1)
        return client


def client_lock(target: QdrantTarget) -> threading.RLock:
    """The lock that serialises the use of the target's client in this process (one per local folder)."""
    if target.kind != "local":
        return threading.RLock()
    with _LOCK:
        return _CLIENT_LOCKS.setdefault(str(target.path), threading.RLock())


def disconnect(target: QdrantTarget, client: Any) -> None:
    """Close a client from ``connect`` (a shared local one when its last user lets go)."""
    if target.kind == "local":
        with _LOCK:
            held = _LOCAL.get(str(target.path))
            if held is not None and held[0] is client:
                if held[1] > 1:
                    _LOCAL[str(target.path)] = (client, held[1] - 1)
                    return
                del _LOCAL[str(target.path)]
    client.close()
