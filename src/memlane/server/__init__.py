"""``memlane serve``: the REST API over ``Memory`` (needs ``pip install 'memlane[server]'``)."""

from __future__ import annotations

from memlane.errors import MissingDependencyError

try:
    import fastapi  # noqa: F401
    import jinja2  # noqa: F401
    import prometheus_client  # noqa: F401
    import python_multipart  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("the REST server", "server") from exc

from memlane.server.admin_store import AdminStore, open_admin_store
from memlane.server.app import create_app
from memlane.server.keys import AdminDB, ApiKey, NewKey, Scope
from memlane.server.service import ServerSettings

__all__ = ["AdminDB", "AdminStore", "ApiKey", "NewKey", "Scope", "ServerSettings", "create_app", "open_admin_store"]
