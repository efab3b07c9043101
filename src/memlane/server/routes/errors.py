"""The error statuses each operation documents: the app declares every error once (``_ERRORS``), and here each
route keeps only those it can answer with, so a generated client or a reader sees, say, that ``/health`` needs no key
and that only calls which embed text can meet another embedder's store (409).

Kept on every route: 400 and 413 (the body limit runs before any route). 401/403/429 where a key is needed; 404
where the call looks something up; 409 where it embeds text; 415 where it takes a JSON body; 503 where it waits for a
worker thread or the store.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

#: Answered without a key (no 401, 403 or 429).
OPEN = frozenset({"health", "ready"})
#: Answered without a worker thread or the store (no 503 unless the route declares its own, as /ready does).
NO_STORE = frozenset({"health", "metrics"})
#: Look a memory, job, entity or key up (404).
LOOKUPS = frozenset(
    {
        "get_memory",
        "update_memory",
        "delete_memory",
        "get_history",
        "record_feedback",
        "get_job",
        "get_job_result",
        "get_graph",
        "list_relations",
        "restore_memory",
        "merge_entities",
        "split_entity",
        "revoke_key",
        "observe",
    }
)
#: Embed text or compare vectors (409 when the store was indexed with another embedder).
EMBEDS = frozenset(
    {
        "add_memories",
        "search",
        "context",
        "ask",
        "update_memory",
        "observe",
        "import_memories",
        "detect_routines",
        "restore_memory",
        "record_feedback",
    }
)


def statuses(operation: str) -> frozenset[int]:
    """The error statuses ``operation`` can answer with."""
    codes = {400, 413}
    if operation not in OPEN:
        codes |= {401, 403, 429}
    if operation not in NO_STORE:
        codes.add(503)
    if operation in LOOKUPS:
        codes.add(404)
    if operation in EMBEDS:
        codes.add(409)
    return frozenset(codes)


def _error(code: str) -> bool:
    """An error status FastAPI does not add itself (422, request validation, stays where FastAPI puts it)."""
    return code.isdigit() and int(code) >= 400 and code != "422"


def document_errors(app: FastAPI) -> None:
    """Narrow each operation's documented errors to ``statuses`` in the app's OpenAPI document (built once)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = build()
            for operations in doc.get("paths", {}).values():
                for op in operations.values():
                    allowed = {str(c) for c in statuses(op["operationId"])}
                    if "application/json" in op.get("requestBody", {}).get("content", {}):
                        allowed.add("415")  # a JSON body sent as another type (``server/strict.py``)
                    op["responses"] = {c: r for c, r in op["responses"].items() if not _error(c) or c in allowed}
        return app.openapi_schema or build()

    app.openapi = openapi  # type: ignore[method-assign]
