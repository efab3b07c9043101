"""The per-term BM25 inputs of a large scope, remembered between searches and checked against what changed since.

A search's BM25 needs, for each query term, the live memories that match it (in their own words or their previous
turn's), each one's weighted frequency and its document length. Gathering those from the postings is the costly
part (random reads over arrays as long as the scope: about 16 ms of a 1M-memory search, most of it for a few common
words), and they change only where memories change. So a term's gathered arrays are kept (``TermEntry``), and
what a change can touch is recorded instead of recomputed:

- a memory's own words and its words as its next turn's context (known when it is added): those terms are dropped;
- the slots whose membership or links changed (the memory, and its previous and next turn, whose document length or
  context changes with it): an entry holding any of them, as a match or as a context source, is recomputed when a
  search next asks for it. Checking happens then, for that search's terms only, so a write costs a list append.

IDF and the mean document length are not kept: they are computed per search from the entry's length and the
scope's statistics, so scores stay exactly those of the uncached computation (and of FTS5's ``bm25()``).
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np

#: Terms matching fewer memories are cheap to gather each time and are not kept.
MIN_MATCHES: Final = 1024
#: The most matches kept over all terms of a scope (24 bytes each): about 200 MB, 40% of a 1M scope's postings.
MAX_ENTRIES: Final = 1 << 23
#: Changes recorded before everything is dropped and the record starts again.
MAX_CHANGES: Final = 4096


@dataclass(slots=True)
class TermEntry:
    """What one term contributes to BM25: its matches (ascending slots) and what their scores are computed from."""

    slots: np.ndarray  # int64: live memories matching the term in their own words or their previous turn's
    freq: np.ndarray  # float64: own count + CONTEXT_WEIGHT x the previous turn's
    length: np.ndarray  # float64: document length (own + previous turn's + the scope token)
    sources: np.ndarray  # int64, ascending: live turns whose text holds the term and that have no next turn yet
    seen: int = 0  # the number of changes it has been checked against


def _holds(sorted_slots: np.ndarray, slots: np.ndarray) -> bool:
    if not len(sorted_slots):
        return False
    at = np.searchsorted(sorted_slots, slots)
    at[at >= len(sorted_slots)] = len(sorted_slots) - 1
    return bool((sorted_slots[at] == slots).any())


class TermCache:
    """``TermEntry`` per term, least recently used dropped first. Not thread-safe (its scope's owner serialises)."""

    def __init__(
        self, *, min_matches: int | None = None, max_entries: int | None = None, max_changes: int | None = None
    ) -> None:
        self.min_matches = MIN_MATCHES if min_matches is None else min_matches
        self._max_entries = MAX_ENTRIES if max_entries is None else max_entries
        self._max_changes = MAX_CHANGES if max_changes is None else max_changes
        self._entries: OrderedDict[str, TermEntry] = OrderedDict()
        self._held = 0  # matches held over all entries
        self._changed: list[int] = []  # slots changed since the last reset, in order
        self._base = 0  # changes counted before the last reset

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def _count(self) -> int:
        return self._base + len(self._changed)

    def get(self, term: str) -> TermEntry | None:
        """The term's entry if nothing it depends on changed since it was made; else None (and it is dropped)."""
        entry = self._entries.get(term)
        if entry is None:
            return None
        count = self._count
        if entry.seen < count:
            since = np.asarray(self._changed[entry.seen - self._base :], dtype=np.int64)
            if _holds(entry.slots, since) or _holds(entry.sources, since):
                self._drop(term)
                return None
            entry.seen = count
        self._entries.move_to_end(term)
        return entry

    def put(self, term: str, entry: TermEntry) -> None:
        """Keep ``entry`` (made from the scope as it is now) if it is worth keeping."""
        size = len(entry.slots) + len(entry.sources)
        if len(entry.slots) < self.min_matches or size > self._max_entries:
            return
        self._drop(term)
        entry.seen = self._count
        self._entries[term] = entry
        self._held += size
        while self._held > self._max_entries:
            self._drop(next(iter(self._entries)))

    def changed(self, slots: Iterable[int], terms: Iterable[str] = ()) -> None:
        """Record a change: ``slots`` whose membership, length or links changed; ``terms`` whose postings did."""
        for term in terms:
            self._drop(term)
        if not self._entries:
            self._base += len(self._changed)
            self._changed.clear()
            return
        self._changed.extend(s for s in slots if s >= 0)
        if len(self._changed) > self._max_changes:
            self.clear()

    def clear(self) -> None:
        """Forget every entry (a bulk change)."""
        self._entries.clear()
        self._held = 0
        self._base += len(self._changed)
        self._changed.clear()

    def _drop(self, term: str) -> None:
        entry = self._entries.pop(term, None)
        if entry is not None:
            self._held -= len(entry.slots) + len(entry.sources)


Postings: TypeAlias = "tuple[array[int], array[float]]"


def _live(post: Postings | None, alive: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The live (slots, counts) of one term's postings."""
    if post is None:
        return None
    s = np.frombuffer(post[0], dtype=np.int64)
    tf = np.frombuffer(post[1], dtype=np.float32)
    keep = alive[s]
    if not keep.any():
        return None
    return s[keep], tf[keep].astype(np.float64)


def gather(
    own_postings: Postings | None,
    ctx_postings: Postings | None,
    *,
    alive: np.ndarray,
    nxt: np.ndarray,
    prev: np.ndarray,
    length: np.ndarray,
    ctx_length: np.ndarray,
    context_weight: float,
) -> TermEntry | None:
    """A term's ``TermEntry`` from its postings in memories' own words and in turns' texts (the context of their next
    turn) and the scope's arrays by slot; None when no live memory matches it.
    """
    own, ctx = _live(own_postings, alive), _live(ctx_postings, alive)
    if own is None and ctx is None:
        return None
    sources = np.empty(0, dtype=np.int64)
    if ctx is None:
        assert own is not None
        hit, freq = own
    else:
        after = nxt[ctx[0]]
        linked = after >= 0
        after, weight = after[linked], context_weight * ctx[1][linked]  # distinct: a turn has one next turn
        # A turn whose text holds the term and has no next turn yet: a turn arriving after it matches (the linked
        # ones are represented by their next turn, a match, which any relinking changes)
        sources = ctx[0][~linked]  # ascending, as postings hold their slots
        if own is None:
            hit, freq = after, weight
        else:
            hit = np.concatenate((own[0], after))
            freq = np.concatenate((own[1], weight))
    order = np.argsort(hit, kind="stable")
    hit, freq = hit[order], freq[order]
    if len(hit) > 1:  # a memory matching in its own words and its previous turn's: one match, counts summed
        first = np.empty(len(hit), dtype=np.bool_)
        first[0] = True
        np.not_equal(hit[1:], hit[:-1], out=first[1:])
        if not first.all():
            starts = np.flatnonzero(first)
            freq = np.add.reduceat(freq, starts)
            hit = hit[starts]
    before = prev[hit]
    context = np.where(before >= 0, ctx_length[np.maximum(before, 0)], 0.0)
    # float64: a float32 array divided by a Python float stays float32 (NumPy 2), and the scores must be FTS5's
    return TermEntry(hit, freq, 1.0 + length[hit] + context, sources)
