"""A memlane server from Python, with ``Memory``'s methods: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

Over httpx (``pip install 'memlane[client]'``). Switching from the embedded library is one line::

    memory = Memory("memories.db")                                  # embedded
    memory = Client("http://127.0.0.1:8000", api_key="ml_...")      # the same calls, over REST
"""

from __future__ import annotations

from memlane.errors import MissingDependencyError

try:
    import httpx  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("the HTTP client", "client") from exc

from memlane.apikeys import KeyInfo, NewKeyInfo
from memlane.client.transport import AsyncClient, Client
from memlane.client.wire import (
    AuthenticationError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ServerUnavailableError,
)

__all__ = [
    "AsyncClient",
    "AuthenticationError",
    "Client",
    "KeyInfo",
    "NewKeyInfo",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerError",
    "ServerUnavailableError",
]
