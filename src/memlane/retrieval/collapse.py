"""One result per statement: a message and the typed memories distilled from it are folded into one hit.

A typed memory ("Caroline went to an LGBTQ support group on 2023-05-07") restates part of the turn it was
distilled from ("I went to a LGBTQ support group yesterday"). When both match a query they are one statement in two
forms, and listing both spends two of the few places a search returns (and twice the tokens in a prompt) on it.
The best-ranked form becomes the hit; the other forms that matched ride along in ``Hit.related``, so nothing that
matched is hidden, and the place goes to the next statement.

A preference, fact, plan, event or relation belongs to the statement of its first source message; anything else
(messages, observations, entity profiles and routines, which gather many turns, and typed memories written without
sources) is a statement of its own. Two typed memories of one turn fold together as well: the turn holds both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from memlane.models import Hit, MemoryItem, MemoryKind

#: The kinds that restate (part of) one turn, and so fold into it.
RESTATING: Final = frozenset(
    {MemoryKind.PREFERENCE, MemoryKind.FACT, MemoryKind.PLAN, MemoryKind.EVENT, MemoryKind.RELATION}
)


def statement_of(item: MemoryItem) -> str:
    """The id of the message a memory restates (its first source), else its own id."""
    return item.sources[0].memory_id if item.sources and item.kind in RESTATING else item.id


def collapse(hits: Sequence[Hit], top_k: int) -> list[Hit]:
    """The first ``top_k`` statements of ``hits`` (best first), each with its later forms in ``Hit.related``."""
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        key = statement_of(hit.memory)
        group = groups.get(key)
        if group is not None:
            group.append(hit)
        elif len(groups) < top_k:
            groups[key] = [hit]
        # A new statement past top_k is left out; later forms of a kept one are still folded into it.
    out = []
    for first, *rest in groups.values():
        if rest:
            first.related = [h.memory for h in rest]
        out.append(first)
    return out


def collapse_from(
    ranked: Sequence[str], fetch: Callable[[Sequence[str]], list[Hit]], top_k: int, *, read: Sequence[Hit] = ()
) -> list[Hit]:
    """``collapse`` over the hits of ``ranked`` keys (best first), fetched ``top_k`` at a time.

    Folding frees places, so more than ``top_k`` fused candidates may be read: the next step is fetched only while
    fewer than ``top_k`` statements have been found. ``read`` are hits already fetched, of the best keys: their keys
    are not fetched again.
    """
    step = max(top_k, 1)
    hits: list[Hit] = list(read)
    statements = {statement_of(h.memory) for h in hits}
    done = {h.memory.id for h in hits}
    ranked = [k for k in ranked if k not in done]
    for start in range(0, len(ranked), step):
        if len(statements) >= top_k:
            break
        more = fetch(ranked[start : start + step])
        hits += more
        statements.update(statement_of(h.memory) for h in more)
    return collapse(hits, top_k)
