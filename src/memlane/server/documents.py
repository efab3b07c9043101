"""``POST /v1/documents``: documents and notes stored as memories of their own (``Memory.add_documents``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from memlane.models import AddResult
from memlane.server.keys import Scope
from memlane.server.schemas import Id, Text, UserId
from memlane.server.service import Principal, Service
from memlane.server.strict import StrictRoute

_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer ml_<prefix>_<secret>`")

Stamp = Annotated[str, Field(max_length=64, description="ISO 8601; naive times are UTC")]


class DocumentIn(BaseModel):
    """One document: its text, and optionally a title, a source (path, URL, id), a time and metadata."""

    model_config = ConfigDict(strict=True, extra="forbid")

    text: Text
    title: str | None = None
    source: str | None = None
    timestamp: Stamp | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class DocumentsRequest(BaseModel):
    """``POST /v1/documents``: the arguments of ``Memory.add_documents``."""

    model_config = ConfigDict(strict=True, extra="forbid")

    user_id: UserId
    documents: Annotated[list[str | DocumentIn], Field(min_length=1)]
    agent_id: Id | None = None
    timestamp: Stamp | None = None
    metadata: dict[str, Any] | None = None


def _writer(request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
    svc: Service = request.app.state.service
    return svc.authenticate(request, creds, Scope.WRITE)


Writer = Annotated[Principal, Depends(_writer)]

router = APIRouter(tags=["memories"], route_class=StrictRoute)


@router.post("/v1/documents", response_model=AddResult)
async def add_documents(body: DocumentsRequest, request: Request, who: Writer) -> AddResult:
    """Store documents or notes (all or none), each a memory of its own with no session and no neighbours; a long
    text is embedded passage by passage, and search names the passage that matched. A text already stored is
    listed in `duplicates`.
    """
    svc: Service = request.app.state.service
    # the library validates each document and names the one at fault (a 400)
    docs: list[str | dict[str, Any]] = [
        d if isinstance(d, str) else d.model_dump(exclude_none=True) for d in body.documents
    ]
    return await svc.call(
        who,
        "add_documents",
        lambda m: m.add_documents(
            docs,
            user_id=body.user_id,
            agent_id=body.agent_id,
            timestamp=body.timestamp,
            metadata=body.metadata,
            tenant=who.tenant,
        ),
        user_id=body.user_id,
        describe=lambda r: f"{len(r.items)} documents, {len(r.duplicates)} duplicates",
    )
