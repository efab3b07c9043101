"""Request bodies and responses of the routes that bring REST to parity with the library: strict (no coercion, no
unknown field), each the arguments of one ``Memory`` call.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from memlane.apikeys import KeyInfo, ScopeName
from memlane.models import MemoryItem
from memlane.observe import Observation
from memlane.server.keys import ApiKey
from memlane.server.schemas import Id, Text, TopK, UserId

#: A time in a JSON body is an ISO 8601 string, so it is the one field parsed from its text form.
Time = Annotated[datetime, Field(strict=False, description="ISO 8601; a time without an offset is UTC")]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class AskRequest(_Strict):
    """``POST /v1/ask``: the arguments of ``Memory.ask``."""

    user_id: UserId
    question: Text
    top_k: TopK = 10
    now: Time | None = Field(default=None, description="anchors relative times ('on Monday'); default: now")
    token_budget: int = Field(default=2000, ge=1, le=1_000_000)


class QueryRequest(_Strict):
    """``POST /v1/memories/query``: the arguments of ``Memory.list`` with any of its filters."""

    user_id: UserId
    filters: dict[str, Any] = Field(
        default_factory=dict, description="the fields of Filters: kind, role, speaker, since, until, metadata, ..."
    )
    limit: int = Field(default=100, ge=0, le=1000)
    offset: int = Field(default=0, ge=0, le=10**12)


class ObserveRequest(_Strict):
    """``POST /v1/observations``: the arguments of ``Memory.observe``."""

    user_id: UserId
    observations: list[Observation] = Field(min_length=1, max_length=1000)
    session_id: Id | None = None
    agent_id: Id | None = None


class RoutinesRequest(_Strict):
    """``POST /v1/routines``: detect and store this user's routines (``Memory.routines``)."""

    user_id: UserId
    min_occurrences: int = Field(default=3, ge=2, le=1_000_000)


class RestoreRequest(_Strict):
    """``POST /v1/archive/{memory_id}/restore``: whose archived memory to bring back."""

    user_id: UserId


class ForgetRequest(_Strict):
    """``POST /v1/forget``: enforce capacity for one user now."""

    user_id: UserId
    hard: bool = Field(default=False, description="destroy the evicted memories instead of archiving them")


class MergeRequest(_Strict):
    """``POST /v1/entities/merge``: two names (or aliases) of the same entity."""

    user_id: UserId
    source: Id
    target: Id


class SplitRequest(_Strict):
    """``POST /v1/entities/split``: the memories that name another entity than the one they were read as."""

    user_id: UserId
    entity: Id
    new_name: Id
    memory_ids: list[Id] = Field(min_length=1, max_length=1000)


class RetryRequest(_Strict):
    """``POST /v1/jobs/retry``: whose failed jobs to queue again."""

    user_id: UserId


class Counted(BaseModel):
    """How many memories (or jobs) a call changed."""

    count: int


class TimelineResponse(BaseModel):
    """``GET /v1/timeline``: one page of a user's timeline and the cursor of the next (``null`` on the last page)."""

    items: list[MemoryItem]
    next: str | None = Field(description="pass as `after` for the next page; null on the last page")


class KeyRequest(_Strict):
    """``POST /admin/keys``: a new key of the caller's tenant."""

    scopes: list[ScopeName] = Field(min_length=1, max_length=3)
    name: str = Field(default="", max_length=200, description="a label for people (printable characters)")


def key_info(key: ApiKey) -> KeyInfo:
    """How the API shows a stored key."""
    return KeyInfo(
        prefix=f"ml_{key.prefix}",
        tenant=key.tenant,
        scopes=sorted(str(s) for s in key.scopes),
        name=key.name,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
    )
