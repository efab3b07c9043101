"""The memories read from given turns: the typed memories whose sources name any of them (what a job wrote)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memlane.models import MemoryItem, MemoryKind


@runtime_checkable
class SourcedIndex(Protocol):
    """Memories by the turns they were read from."""

    def sourced_from(
        self, user_id: str, memory_ids: Sequence[str], kinds: Sequence[MemoryKind]
    ) -> builtins.list[MemoryItem]:
        """The memories of ``kinds`` of this user (superseded ones included) with any of ``memory_ids`` among their
        sources, oldest first; the sources are matched in the store, so only the matches are read out.
        """
        ...
