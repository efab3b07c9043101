"""The REST API's route modules beyond the core memories' routes of ``memlane.server.app``, and what names every
operation in the OpenAPI document: stable operation ids (what generated clients call their methods), the tags and
the ``servers`` entry.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from memlane.server.routes import admin, library, maintenance
from memlane.server.routes.errors import document_errors

#: The operation id of each route whose handler's name is not already the id wanted (FastAPI's default id,
#: e.g. ``list__v1_memories_get``, changes whenever a path does, and reads badly as a method name).
OPERATION_IDS: dict[str, str] = {
    "add": "add_memories",
    "get": "get_memory",
    "list_": "list_memories",
    "update": "update_memory",
    "delete": "delete_memory",
    "delete_all": "delete_all_memories",
    "history": "get_history",
    "feedback": "record_feedback",
    "export": "export_memories",
    "import_": "import_memories",
    "jobs": "list_jobs",
    "job": "get_job",
    "stats": "get_stats",
    "flagged": "list_flagged",
    "audit": "get_audit_log",
    "graph": "get_graph",
    "relations": "list_relations",
    "routines": "detect_routines",
    "job_result": "get_job_result",
    "forget": "forget_memories",
}

TAGS: list[dict[str, Any]] = [
    {"name": "memories", "description": "Store, search, answer from, change and delete a user's memories."},
    {"name": "graph", "description": "The entity graph read from a user's memories."},
    {"name": "archive", "description": "Memories evicted beyond capacity, and bringing them back."},
    {"name": "transfer", "description": "Export and import as JSON Lines."},
    {"name": "jobs", "description": "Background extraction jobs, their state and what they wrote."},
    {"name": "keys", "description": "API keys of the caller's tenant (admin scope)."},
    {"name": "operations", "description": "Health, readiness, metrics, audit log, flagged memories."},
]

SERVERS: list[dict[str, str]] = [{"url": "/", "description": "this server (memlane serve)"}]


def operation_id(route: APIRoute) -> str:
    """The stable operation id of a route (its handler's name, or the one given in ``OPERATION_IDS``)."""
    return OPERATION_IDS.get(route.name, route.name)


def register(app: FastAPI) -> None:
    """Add the route modules to ``app``, then narrow each route's documented errors to its own (call it last)."""
    app.include_router(library.router)
    app.include_router(maintenance.router)
    app.include_router(admin.router)
    document_errors(app)


__all__ = ["OPERATION_IDS", "SERVERS", "TAGS", "operation_id", "register"]
