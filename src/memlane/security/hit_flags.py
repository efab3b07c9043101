"""Search hits as every adapter returns them (REST, MCP, CLI): each carries its injection flag, and a flagged memory
never rides along unmarked as another hit's related form.

``quote_hits`` is the form for a channel whose output goes straight into a model's context (MCP): a flagged
memory's text is withheld, every other text is made inert by the prompt fence's rules (``memlane.security.fencing``),
the same treatment ``context`` gives what it quotes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from memlane.models import Hit, MemoryItem
from memlane.security.fencing import neutralise

if TYPE_CHECKING:
    from memlane.engine import Memory

#: What stands in for the text of a flagged memory where it would reach a model.
WITHHELD: Final = "[withheld: flagged as a likely prompt injection]"


def flag_hits(memory: Memory, hits: Sequence[Hit], *, user_id: str, tenant: str | None = None) -> list[Hit]:
    """``hits`` with ``flag`` set on each flagged one; flagged related forms are dropped from the hits they were
    folded into (each is still returned as its own hit, flagged, when it ranks).
    """
    ids = [m.id for h in hits for m in (h.memory, *h.related)]
    flags = memory.flags(ids, user_id=user_id, tenant=tenant) if ids else {}
    if not flags:
        return list(hits)
    return [
        h.model_copy(update={"flag": flags.get(h.memory.id), "related": [m for m in h.related if m.id not in flags]})
        for h in hits
    ]


def _quoted(item: MemoryItem, withheld: bool) -> MemoryItem:
    text = WITHHELD if withheld else neutralise(item.text)
    speaker = None if item.speaker is None else neutralise(item.speaker)
    return item.model_copy(update={"text": text, "speaker": speaker})


def quote_hits(hits: Sequence[Hit]) -> list[Hit]:
    """Flagged hits (from ``flag_hits``) with their text withheld, every other text made inert for a prompt."""
    return [
        h.model_copy(
            update={
                "memory": _quoted(h.memory, h.flag is not None),
                "related": [_quoted(m, False) for m in h.related],
                "query": "",
            }
        )
        for h in hits
    ]


def quote_items(
    memory: Memory, items: Sequence[MemoryItem], *, user_id: str, tenant: str | None = None
) -> list[MemoryItem]:
    """Listed memories for a model's context: a flagged one's text withheld, every other text made inert."""
    flags = memory.flags([it.id for it in items], user_id=user_id, tenant=tenant) if items else {}
    return [_quoted(it, it.id in flags) for it in items]
