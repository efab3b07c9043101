"""Security views: injection flags of memories, the administrator's list of flagged ones, hits fenced for a
prompt, and the sealed original of a redacted memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memlane.errors import ValidationError
from memlane.models import FlaggedMemory, Hit, InjectionFlag
from memlane.scope import DEFAULT_TENANT, check_tenant, unscope
from memlane.security.guard import Guard, flags_for
from memlane.security.sanitise import Fenced
from memlane.security.sanitise import fence as fence_hits
from memlane.security.validation import check_bool, check_id
from memlane.services.core import Core
from memlane.services.scope import Scope
from memlane.store.base import RecordReader, SecurityLog


class SecurityStore(RecordReader, SecurityLog, Protocol):
    """What the security views read: memories by id, and the flags and sealed originals."""


class Security:
    """Flags, the flagged list, fencing and revealing; what reaches a model leaves flagged memories out."""

    def __init__(self, core: Core, store: SecurityStore, guard: Guard) -> None:
        self.core = core
        self.store = store
        self.guard = guard

    def flags(self, scope: Scope, memory_ids: Sequence[str]) -> dict[str, InjectionFlag]:
        """The injection flags of those of ``memory_ids`` that are flagged, or extracted from a flagged message."""
        ids = [check_id(m, what="memory_ids", max_chars=self.core.limits.id_chars) for m in memory_ids]
        return flags_for(self.store, scope.key, list(self.store.get_many(scope.key, ids).values()))

    def unflagged(self, scope: Scope, hits: list[Hit]) -> list[Hit]:
        """``hits`` without the memories flagged as likely prompt injections (kept out of anything sent to a model)."""
        self.core.counts_first()
        flagged = self.flags(scope, [m.id for h in hits for m in (h.memory, *h.related)])
        if not flagged:
            return hits
        return [
            h.model_copy(update={"related": [m for m in h.related if m.id not in flagged]})
            for h in hits
            if h.memory.id not in flagged
        ]

    def flagged(self, *, user_id: str | None, tenant: str | None, limit: int, offset: int) -> list[FlaggedMemory]:
        """Memories flagged as likely prompt injections, of one user or (default tenant only) of all, their text kept;
        most recently flagged first. These are left out of assembled context. Without ``user_id`` it lists the whole
        store, so it is refused for a tenant other than the default.
        """
        key = None
        if user_id is None:
            if check_tenant(tenant) != DEFAULT_TENANT:
                raise ValidationError("flagged() of a tenant other than the default needs a user_id")
        else:
            key = self.core.bind(user_id, tenant).key
        limit, offset = self.core.page(limit, offset)
        found = self.store.flagged(key, limit, offset)
        for f in found:
            unscope(f.memory)
        return found

    def fence(self, scope: Scope, hits: Sequence[Hit], *, token_budget: int, include_flagged: bool) -> Fenced:
        """Hits assembled for a prompt as quoted data, flagged memories left out unless ``include_flagged``."""
        check_bool(include_flagged, what="include_flagged")
        flags = self.flags(scope, [h.memory.id for h in hits])
        return fence_hits(hits, token_budget, flags=flags, include_flagged=include_flagged)

    def reveal(self, scope: Scope, memory_id: str) -> str:
        """The original text of a redacted memory (its stored text when nothing was)."""
        memory_id = check_id(memory_id, what="memory_id", max_chars=self.core.limits.id_chars)
        item = self.store.get(scope.key, memory_id)
        original = self.guard.reveal(self.store, scope.key, memory_id)
        return item.text if original is None else original
