"""``Memory.context``: the memories for an LLM prompt, current facts first, then supporting turns, within a budget."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from memlane.answer.fence import ItemFence
from memlane.models import TYPED_KINDS, Hit, MemoryItem


class Context(BaseModel):
    """An assembled prompt context: the text, the memories it holds (in order), its size, and what did not fit."""

    model_config = ConfigDict(extra="forbid")

    text: str
    memories: list[MemoryItem] = Field(default_factory=list)
    tokens: int = 0
    token_budget: int
    left_out: int = Field(default=0, description="relevant memories that did not fit in the budget")


def approx_tokens(text: str) -> int:
    """A model-agnostic token estimate: about four characters a token (never under one a word)."""
    return max(len(text.split()), (len(text) + 3) // 4)


def assemble(
    hits: Sequence[Hit],
    *,
    token_budget: int,
    fence: ItemFence,
    extra: Sequence[MemoryItem] = (),
) -> Context:
    """Current typed memories (facts, preferences, ...) first, then turns and observations, each group by score;
    ``extra`` memories (a structured answer's evidence) lead their group. Stops at the budget, whole memories only.
    """
    seen: set[str] = set()
    ordered: list[MemoryItem] = []
    # A hit's other forms (the turn a fact restates, folded into it by search) join their groups: a fact leads,
    # the turn it came from supports it.
    for item in [*extra, *(m for h in hits for m in (h.memory, *h.related))]:
        if item.id not in seen and item.is_current:
            seen.add(item.id)
            ordered.append(item)
    facts = [m for m in ordered if m.kind in TYPED_KINDS]
    turns = [m for m in ordered if m.kind not in TYPED_KINDS]
    parts = [fence.preamble]
    used = approx_tokens(fence.preamble)
    kept: list[MemoryItem] = []
    left_out = 0
    for title, group in (("Current facts:", facts), ("Supporting turns and observations:", turns)):
        if not group:
            continue
        header_cost = approx_tokens(title)
        header_added = False
        for item in group:
            block = fence(item)
            cost = approx_tokens(block) + (0 if header_added else header_cost)
            if used + cost > token_budget:
                left_out += 1
                continue
            if not header_added:
                parts.append(title)
                header_added = True
            parts.append(block)
            used += cost
            kept.append(item)
    if not kept:
        return Context(text="", memories=[], tokens=0, token_budget=token_budget, left_out=left_out)
    return Context(text="\n".join(parts), memories=kept, tokens=used, token_budget=token_budget, left_out=left_out)
