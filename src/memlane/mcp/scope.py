"""What an MCP server may touch: one store and, when configured, one user of one tenant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlane.errors import ValidationError
from memlane.scope import DEFAULT_TENANT, check_tenant
from memlane.security.validation import check_id


@dataclass(frozen=True)
class McpScope:
    """The scope every tool call runs in.

    With ``user_id`` set the server serves that user only: a call naming another user is refused. Without it,
    every call must name its user. ``tenant`` follows the library's rule (``memlane.scope.check_tenant``) and is
    passed to it as is (the default tenant is the embedded default). ``max_id_chars`` is the store's id limit:
    ``build_server`` sets it from the store it serves.
    """

    user_id: str | None = None
    tenant: str = DEFAULT_TENANT
    max_id_chars: int = 256

    def __post_init__(self) -> None:
        if self.user_id is not None:
            check_id(self.user_id, what="--user", max_chars=self.max_id_chars)
        check_tenant(self.tenant)  # the library's and the REST API's own rule (every store keys by tenant)

    def user(self, requested: str | None) -> str:
        """The user a call acts for: the configured one, or the one the call names."""
        if self.user_id is None:
            if requested is None or requested == "":
                raise ValidationError("user_id is required: this server is not scoped to one user")
            return check_id(requested, what="user_id", max_chars=self.max_id_chars)
        if requested not in (None, "", self.user_id):
            raise ValidationError(f"this server is scoped to user {self.user_id!r}; it cannot act for another user")
        return self.user_id

    @property
    def tenant_kwargs(self) -> dict[str, Any]:
        """Keyword arguments naming the tenant, for a library call (none for the default tenant)."""
        return {} if self.tenant == DEFAULT_TENANT else {"tenant": self.tenant}
