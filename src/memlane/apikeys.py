"""API keys as the REST API shows them (``/admin/keys``), shared by the server and the HTTP client."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

ScopeName = Literal["read", "write", "admin"]


class KeyInfo(BaseModel):
    """A stored key, without its secret."""

    prefix: str = Field(description="the key's public name, ml_<prefix>")
    tenant: str
    scopes: list[ScopeName]
    name: str
    created_at: datetime
    revoked_at: datetime | None = None


class NewKeyInfo(KeyInfo):
    """A key just created: ``secret`` is the whole key, shown this once and never stored."""

    secret: str
