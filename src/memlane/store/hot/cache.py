"""The read models of one database, one per user searched, kept current by replaying its change feed (any backend).

A backend supplies a ``HotFeed``: a cheap generation token, the changes since a mark (or word that the log no
longer reaches that far back), the rows of some keys, a snapshot of a user, and pruning. This module holds the
backend-independent part: which models are open, when a model is replayed, rebuilt or pruned, and never using a
model inside a transaction of this process (its writes may still roll back).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

from memlane.store.hot.rows import HotRow
from memlane.store.hot.scope import HotScope


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed for a user after a mark: the row keys to re-read (in log order) and the mark they bring it to."""

    keys: Sequence[int]
    upto: int
    floor: int  # the oldest mark the log still reaches: a model may prune up to what it applied
    erasures: int = 0  # the store's erasure counter when the changes were read (see ``HotFeed.erasures``)


class HotFeed(Protocol):
    """One backend's change log, as ``HotScopes`` reads it."""

    @property
    def lock(self) -> AbstractContextManager[object]:
        """Held while a model is read or replayed."""

    @property
    def writable(self) -> bool:
        """Whether this process may prune the log."""

    @property
    def prune_after(self) -> int:
        """A user's log is pruned (up to what this process applied) once it holds this many entries past the floor."""

    def in_transaction(self) -> bool:
        """Whether this thread is inside a transaction of the store (its writes may roll back)."""

    def generation(self, user_id: str) -> Hashable:
        """A token that stays equal while nothing of ``user_id`` can have changed (cheap: called per read)."""

    def changes(self, user_id: str, since: int) -> Changes | None:
        """The changes after mark ``since``; ``None`` when the log was pruned past it (the model must be rebuilt)."""

    def rows(self, user_id: str, keys: Sequence[int]) -> list[HotRow]:
        """The present rows among ``keys`` (a key not returned was deleted)."""

    def snapshot(self, user_id: str) -> tuple[int, list[HotRow]]:
        """Every row of the user, with a mark taken before them (replaying from it again is harmless)."""

    def prune(self, user_id: str, upto: int) -> None:
        """Drop the user's log entries up to mark ``upto`` and raise the floor to it."""

    def erasures(self) -> int:
        """A store-wide counter every ``delete_all`` moves (it erases a user's log too, and keeps no trace of whom)."""

    def count(self, user_id: str) -> int:
        """How many memories the user holds."""


#: Memories the open models of one store may hold in all (about 2 KiB of memory each with LoCoMo-like turns); past
#: it the least recently searched users' models are closed (rebuilt from the database when searched again).
MAX_ROWS = 1_000_000


class HotScopes:
    """The read models of a database, one per user searched, current with its feed; least recently used models are
    closed once they hold more than ``max_rows`` memories together (the model in use always stays).
    """

    def __init__(self, feed: HotFeed, max_rows: int | None = None) -> None:
        self._feed = feed
        self._lock = feed.lock
        self._guard = threading.RLock()  # the maps below, whatever lock the feed gives
        self._max_rows = MAX_ROWS if max_rows is None else max_rows
        self._open: OrderedDict[str, HotScope] = OrderedDict()  # least recently used first
        self._synced: dict[str, Hashable] = {}

    @contextmanager
    def using(self, user_id: str) -> Iterator[HotScope | None]:
        """The user's model, current with the database, held for the block; ``None`` inside a transaction of this
        store (its writes may still roll back: the caller reads the tables instead).
        """
        with self._lock:
            yield None if self._feed.in_transaction() else self.get(user_id)

    def get(self, user_id: str) -> HotScope:
        """The user's model, current with the database (built on first use)."""
        with self._lock, self._guard:
            at = self._feed.generation(user_id)
            held = self._open.get(user_id)
            if held is not None:
                self._open.move_to_end(user_id)
            if held is not None and self._synced.get(user_id) == at:
                return held
            changes = None if held is None else self._feed.changes(user_id, held.applied_seq)
            if changes is None:  # never opened, or the log was pruned past its mark: rebuilt
                held = None
            elif held is not None:
                self._replay(user_id, held, changes)
                if changes.erasures != held.erasures_seen:
                    # Some user's memories were all deleted, log and all. If they were this user's, the model holds
                    # rows the replay cannot know are gone, and then it cannot match the user's count.
                    if self._feed.count(user_id) == len(held):
                        held.erasures_seen = changes.erasures
                    else:
                        held = None
            if held is None:
                held = self._build(user_id)
                self._open[user_id] = held
                self._evict()
            self._synced[user_id] = at
            return held

    def _evict(self) -> None:
        """Close least recently used models until the open ones fit the budget (never the newest)."""
        total = sum(len(m) for m in self._open.values())
        while total > self._max_rows and len(self._open) > 1:
            user, model = self._open.popitem(last=False)
            self._synced.pop(user, None)
            total -= len(model)

    def _build(self, user_id: str) -> HotScope:
        erasures = self._feed.erasures()  # first: an erasure after it is seen at the next check
        mark, rows = self._feed.snapshot(user_id)
        scope = HotScope(mark)
        scope.erasures_seen = erasures
        scope.apply(rows)
        return scope

    def _replay(self, user_id: str, scope: HotScope, changes: Changes) -> None:
        if changes.keys:
            keys = list(dict.fromkeys(changes.keys))
            present = self._feed.rows(user_id, keys)
            found = {r.pk for r in present}
            scope.apply(present, removed=[k for k in keys if k not in found])
        scope.applied_seq = changes.upto
        if changes.keys and scope.applied_seq - changes.floor > self._feed.prune_after and self._feed.writable:
            self._feed.prune(user_id, scope.applied_seq)

    def forget(self, user_id: str) -> None:
        """After a user's data was deleted: drop their model."""
        with self._guard:
            self._open.pop(user_id, None)
            self._synced.pop(user_id, None)

    def drop(self) -> None:
        with self._guard:
            self._open.clear()
            self._synced.clear()
