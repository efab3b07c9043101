"""``Scope``: one user within one tenant, checked once per call and handed to the services."""

from __future__ import annotations

from dataclasses import dataclass

from memlane.scope import check_tenant, scope_key
from memlane.security.validation import require_scope


@dataclass(frozen=True, slots=True)
class Scope:
    """A checked ``user_id`` within a checked ``tenant``; ``key`` is what the store files its memories under."""

    user_id: str
    tenant: str
    key: str

    @classmethod
    def bind(cls, user_id: object, tenant: object, *, id_chars: int) -> Scope:
        """Check ``tenant`` (``None``: the default one) and ``user_id``; a bad one is a ``ValidationError``."""
        checked_tenant = check_tenant(tenant)
        checked_user = require_scope(user_id, max_chars=id_chars)
        return cls(checked_user, checked_tenant, scope_key(checked_tenant, checked_user))
