"""The JSON edge of the REST API: request bodies and the few responses that are not library models.

Request bodies are strict: a value of the wrong JSON type is refused, never coerced (``"5"`` is not 5, ``1`` is not
true); times are ISO 8601 strings, parsed by the library like every other time it takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from memlane.models import Hit
from memlane.security.edge_limits import Bound


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


#: The library's own limits, those of the server's store (``memlane.security.edge_limits``), stated in the schema
#: too (the library still checks every value).
UserId = Annotated[str, Field(min_length=1, description="the user within the key's tenant"), Bound("id_chars")]
Id = Annotated[str, Field(min_length=1), Bound("id_chars")]
Text = Annotated[str, Field(min_length=1), Bound("text_chars")]
TopK = Annotated[int, Field(ge=1), Bound("top_k")]
Time = Annotated[str, Field(description="an ISO 8601 time, e.g. 2025-03-02T09:15:00Z")]


class MessageIn(_Body):
    """One turn: the fields of ``memlane.Message``."""

    role: str = "user"
    content: str
    name: str | None = Field(default=None, description="the speaker, when known")
    timestamp: Time | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class AddRequest(_Body):
    """``POST /v1/memories``: the arguments of ``Memory.add``."""

    user_id: UserId
    messages: str | MessageIn | list[str | MessageIn]
    session_id: Id | None = None
    agent_id: Id | None = None
    timestamp: Time | None = None
    metadata: dict[str, Any] | None = None
    infer: bool | None = None
    async_: bool = Field(default=False, alias="async", description="queue extraction and answer 202 with a job id")

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class SearchRequest(_Body):
    """``POST /v1/search``: the arguments of ``Memory.search``; ``explain`` keeps each hit's score breakdown."""

    user_id: UserId
    query: Text
    top_k: TopK = 10
    filters: dict[str, Any] | None = None
    preset: str | None = None
    explain: bool = False


class ContextRequest(_Body):
    """``POST /v1/context``: the arguments of ``Memory.context`` (memories fenced as quoted data for a prompt)."""

    user_id: UserId
    query: Text
    token_budget: int = Field(default=1000, ge=1, le=1_000_000)
    top_k: TopK = 30


class SearchResponse(BaseModel):
    """The hits of a search, best first."""

    hits: list[Hit]


class UpdateRequest(_Body):
    """``PATCH /v1/memories/{id}``: what to change."""

    user_id: UserId
    text: Text | None = None
    metadata: dict[str, Any] | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)


class FeedbackRequest(_Body):
    """``POST /v1/feedback``: whether a memory returned for ``query`` was useful."""

    user_id: UserId
    memory_id: Id
    query: Text
    useful: bool


class Deleted(BaseModel):
    """The ids a delete removed, or how many memories went."""

    deleted: list[str] = Field(default_factory=list)
    count: int


class Imported(BaseModel):
    """How many memories an import added."""

    imported: int


class Health(BaseModel):
    """Liveness, and whether authentication is on."""

    status: str
    version: str
    auth: bool = Field(description="false when started with --insecure-dev: every request is admin of 'default'")
    warning: str | None = None


class Ready(BaseModel):
    """Readiness: whether the store is open and answering."""

    ready: bool
    detail: str = ""


class AuditLine(BaseModel):
    """One line of the audit log as an admin sees it."""

    seq: int
    at: datetime
    key: str | None = Field(description="the public prefix of the key used (ml_<prefix>)")
    tenant: str
    action: str
    user_id: str | None
    target: str | None
    status: int
    detail: str


class ProblemEntry(BaseModel):
    """One problem of an invalid request: where (``loc``, e.g. ``["body", "top_k"]``), what, and its kind."""

    loc: list[str | int]
    msg: str
    type: str


class Problem(BaseModel):
    """Every error: a short, clear ``detail``; for invalid input (400) one entry per problem in ``errors``."""

    detail: str
    errors: list[ProblemEntry] = Field(default_factory=list)
