"""Names learnt late: the mentions a memory stored earlier missed, because the name was not known yet.

A capitalised word that opens a sentence is a name only when the user's entity table already knows it ("Priya
moved into a flat." says nothing of Priya until "Priya's brother Arjun" has taught that Priya is someone). So what
a memory involved depended on the order it was told in: the memories before the first telling kept no mention of
Priya, and the entity dimension, the graph (``memlane graph``) and counting questions missed them.

When a write teaches the user's table a new person, place or organisation, the write's own earlier turns and the
user's stored memories whose own text holds the name (``EntityIndex.naming``, the latest ``MAX_EARLIER`` per name)
are read again with what is known now, and those that name it gain the mention, in the write's transaction
(``RecordWriter.insert(links=...)``). Only the new names are added: nothing a memory was stored with changes. Only
a text where the name opens a sentence is read again (elsewhere it was found the first time). Not done for typed
memories distilled later, nor for a memory's text edited in place (its own mentions are read again then).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple, Protocol

from memlane.enrich.aliases import EntityResolver
from memlane.enrich.entities import AliasRow
from memlane.models import MemoryItem

#: The kinds of entity whose late-learnt names are looked for in earlier memories.
LINKED_KINDS: Final = frozenset({"person", "place", "organisation"})
#: Earlier memories read again per new name (the latest that hold its words).
MAX_EARLIER: Final = 200
_WORDS: Final = re.compile(r"[^\W_]+")


class NamingRow(NamedTuple):
    """A memory whose own text holds a name, as ``EntityIndex.naming`` finds it: enough to read its mentions again."""

    id: str
    text: str
    speaker: str | None
    role: str | None
    entities: tuple[str, ...]


class Naming(Protocol):
    """What finding a user's earlier memories that hold a name needs of the store."""

    def naming(self, user_id: str, words: Sequence[str], limit: int) -> list[NamingRow]: ...


def learnt_names(before: Iterable[AliasRow], changed: Iterable[AliasRow]) -> dict[str, str]:
    """The entities of the linked kinds among ``changed`` rows that ``before`` held neither as entity nor alias:
    canonical name -> display name.
    """
    held = {row.alias for row in before}
    return {
        row.alias: row.display
        for row in changed
        if row.alias == row.target and row.kind in LINKED_KINDS and row.alias not in held
    }


class _Openers:
    """The learnt names where they open the text or a sentence: the one place a name not yet known is passed over."""

    def __init__(self, learnt: Mapping[str, str]) -> None:
        self.name_of = {display: name for name, display in learnt.items() if display}
        alternatives = "|".join(re.escape(d) for d in sorted(self.name_of, key=len, reverse=True))
        self.pattern = re.compile(rf"(?:^|[.!?…:;]['\"’”)\]]*\s+|\n\s*)['\"‘“(\[]*(?P<name>{alternatives})(?!\w)")

    def unheld(self, text: str, held: Iterable[str]) -> bool:
        """Whether a learnt name the memory does not involve yet opens one of its sentences."""
        have = set(held)
        return any(self.name_of[m.group("name")] not in have for m in self.pattern.finditer(text))


def _missing(
    text: str,
    speaker: str | None,
    role: str | None,
    entities: Sequence[str],
    resolver: EntityResolver,
    learnt: Mapping[str, str],
    opens: _Openers,
) -> list[str]:
    if not opens.unheld(text, entities):
        return []
    return [name for name in resolver.involved(text, speaker, role) if name in learnt and name not in entities]


def relink_batch(items: Sequence[MemoryItem], resolver: EntityResolver, learnt: Mapping[str, str]) -> None:
    """Add to the write's own items (in place) the learnt names that turns before the teaching one missed."""
    if not learnt:
        return
    opens = _Openers(learnt)
    for item in items:
        extra = _missing(item.text, item.speaker, item.role, item.entities, resolver, learnt, opens)
        if extra:
            item.entities = [*item.entities, *extra]


def earlier_links(
    store: Naming,
    user_id: str,
    resolver: EntityResolver,
    learnt: Mapping[str, str],
    *,
    exclude: Iterable[str] = (),
) -> dict[str, list[str]]:
    """Stored memories of ``user_id`` that name a learnt entity they were not stored with: memory id -> names."""
    if not learnt:
        return {}
    skip = set(exclude)
    opens = _Openers(learnt)
    out: dict[str, list[str]] = {}
    for display in dict.fromkeys(learnt.values()):
        words = _WORDS.findall(display.lower())
        if not words:
            continue
        for row in store.naming(user_id, words, MAX_EARLIER):
            if row.id in skip:
                continue
            extra = _missing(row.text, row.speaker, row.role, row.entities, resolver, learnt, opens)
            if extra:
                held = out.setdefault(row.id, [])
                held.extend(n for n in extra if n not in held)
    return out
