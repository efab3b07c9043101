"""The read models of one database, one per user searched, kept current by replaying its change feed (any backend).

A backend supplies a ``HotFeed``: a cheap generation token, the changes since a mark (or word that the log no
longer reaches that far back), the rows of some keys, a snapshot of a user, and pruning. This module holds the
backend-independent part: which models are open, when a model is replayed, rebuilt or pruned, and never using a
model inside a transaction of this process (its writes may still roll back).

A large scope's model is built on a thread of its own (``background_rows``): building one takes seconds (about 6 s
at 100k memories on two cores, mostly tokenising), and until it is ready the store answers from its tables, as it
does inside a transaction, instead of making the first search of every process wait for the whole build.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

from memlane.store.hot.rows import HotRow
from memlane.store.hot.scope import HotScope

log = logging.getLogger(__name__)


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

    @property
    def reads_apart(self) -> bool:
        """Whether ``snapshot_apart`` can read while another thread uses the store (its own connection)."""

    def snapshot_apart(self, user_id: str, pause: Callable[[], None]) -> tuple[int, int, list[HotRow]]:
        """``(erasures, mark, rows)``: ``erasures()`` then ``snapshot()``, read without ``lock`` (for a build on
        another thread; only called when ``reads_apart``), calling ``pause`` every few hundred rows it converts.
        """

    def prune(self, user_id: str, upto: int) -> None:
        """Drop the user's log entries up to mark ``upto`` and raise the floor to it."""

    def erasures(self) -> int:
        """A store-wide counter every ``delete_all`` moves (it erases a user's log too, and keeps no trace of whom)."""

    def count(self, user_id: str) -> int:
        """How many memories the user holds."""


#: A user with at least this many memories gets their model built on a thread of its own (where the feed can read
#: apart); a smaller one is built at once by the read that first needs it (well under a second).
BACKGROUND_ROWS = 20_000

#: Rows a background build puts into a model between two looks for running searches (about 15 ms of work), and
#: the longest it waits for them at each look.
STEP_ROWS = 256
PAUSE = 0.05

#: Memories the open models of one store may hold in all (about 2 KiB of memory each with LoCoMo-like turns); past
#: it the least recently searched users' models are closed (rebuilt from the database when searched again).
MAX_ROWS = 1_000_000


class HotScopes:
    """The read models of a database, one per user searched, current with its feed; least recently used models are
    closed once they hold more than ``max_rows`` memories together (the model in use always stays).
    """

    def __init__(self, feed: HotFeed, max_rows: int | None = None, background_rows: int | None = None) -> None:
        self._feed = feed
        self._lock = feed.lock
        self._guard = threading.RLock()  # the maps below, whatever lock the feed gives
        self._max_rows = MAX_ROWS if max_rows is None else max_rows
        self._background_rows = BACKGROUND_ROWS if background_rows is None else background_rows
        self._open: OrderedDict[str, HotScope] = OrderedDict()  # least recently used first
        self._synced: dict[str, Hashable] = {}
        self._building: dict[str, threading.Thread] = {}
        self._failed: set[str] = set()  # users whose background build failed: built at once from then on
        self._epoch = 0  # moved by ``forget`` and ``drop``: a build started before is not installed
        self._turns = threading.Condition()  # ``_serving``: searches running (background builds wait for them)
        self._serving = 0

    @contextmanager
    def using(self, user_id: str) -> Iterator[HotScope | None]:
        """The user's model, current with the database, held for the block; ``None`` inside a transaction of this
        store (its writes may still roll back) or while a large model is being built: the caller reads the tables.
        """
        with self._lock:
            yield None if self._feed.in_transaction() else self.get(user_id)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the models being built in the background, at most ``timeout`` seconds; whether none still is."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._guard:
                building = [t for t in self._building.values() if t.is_alive()]
            if not building:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            building[0].join(left)

    def get(self, user_id: str) -> HotScope | None:
        """The user's model, current with the database (built on first use); ``None`` while it is being built."""
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
                self._open.pop(user_id, None)  # an outdated model goes now: a background build installs only
                self._synced.pop(user_id, None)  # where none is held
                if self._in_background(user_id):
                    return None
                held = self._build(user_id)
                self._open[user_id] = held
                self._evict()
            self._synced[user_id] = at
            return held

    def _in_background(self, user_id: str) -> bool:
        """Whether the user's model is being built on a thread (started here if the user is large enough)."""
        thread = self._building.get(user_id)
        if thread is not None and thread.is_alive():  # (a forked child sees its parent's build as ended)
            return True
        if not self._feed.reads_apart or user_id in self._failed or self._feed.count(user_id) < self._background_rows:
            return False
        thread = threading.Thread(
            target=self._build_apart, args=(user_id, self._epoch), name=f"memlane-read-model-{user_id}", daemon=True
        )
        self._building[user_id] = thread
        thread.start()
        return True

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Held around a search: a background build pauses between its steps while one runs (see ``_yield``)."""
        with self._turns:
            self._serving += 1
        try:
            yield
        finally:
            with self._turns:
                self._serving -= 1
                if not self._serving:
                    self._turns.notify_all()

    def _yield(self) -> None:
        """Between two steps of a background build (``STEP_ROWS`` rows each): wait while a search runs.

        Python threads share one interpreter lock, and a search on the tables gives it up at every row SQLite
        steps through: with a build running alongside, each of those waits out the build's switch interval, which
        made a search at 100k memories take seconds instead of tens of milliseconds. A search now runs beside at
        most one step; the wait is bounded (``PAUSE``), so searches back to back still let the build finish.
        """
        with self._turns:
            if self._serving:
                self._turns.wait_for(lambda: not self._serving, timeout=PAUSE)

    def _build_apart(self, user_id: str, epoch: int) -> None:
        """The body of a background build: read and build without the store's lock, install under it."""
        try:
            erasures, mark, rows = self._feed.snapshot_apart(user_id, self._yield)
            scope = HotScope(mark)
            scope.erasures_seen = erasures
            for part in _steps(rows):
                self._yield()
                scope.apply(part)
            del rows
        except Exception:
            log.warning(
                "building the read model of %r failed; it is built at its next use instead", user_id, exc_info=True
            )
            with self._guard:
                self._failed.add(user_id)
                self._building.pop(user_id, None)
            return
        with self._lock, self._guard:
            self._building.pop(user_id, None)
            if epoch == self._epoch and user_id not in self._open:
                self._open[user_id] = scope  # not synced: the next use replays what changed since ``mark``
                self._synced.pop(user_id, None)
                self._evict()

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
            self._epoch += 1

    def drop(self) -> None:
        with self._guard:
            self._open.clear()
            self._synced.clear()
            self._epoch += 1


def _steps(rows: list[HotRow]) -> Iterator[list[HotRow]]:
    for start in range(0, len(rows), STEP_ROWS):
        yield rows[start : start + STEP_ROWS]
