"""``GraphBuild``: the HNSW graph of a scope that has outgrown exact search, built on a background thread.

Building the graph of a large scope takes a while (about 20 s for 50,000 vectors on two cores, minutes at a
million). Built in the call that crossed the switch size, that time landed on whichever search or write came
first, often the first search after a bulk import. Built here instead, the exact vectors go on answering every
search (exactly: nothing is missed meanwhile) and every write still lands in them at once; the writes made
meanwhile are queued and replayed on the graph, and the graph replaces the exact vectors only once it holds
everything they hold.

The thread reads the vectors a block at a time under the owner's lock (by key, so a row moved by a removal is
neither missed nor read twice), inserts each block with the lock released (usearch releases the GIL), then
replays the queued writes in rounds until few are left, and replays those and installs the graph under the lock.
It inserts on ``settings.build_threads`` threads (every core by default: measured on two cores, 60,000 vectors took
29 s on both and 55 s on one; searches meanwhile are exact and share the cores).

At interpreter exit every build still running is stopped and waited for (each ends at its next step, within a
block's insert): a thread killed inside usearch's C++ code would abort the process. A process forked mid-build has no
build thread: there every such build counts as ended without a graph, and the child's indexes keep exact search.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Callable

from memlane.store.ann.hnsw import HnswVectors
from memlane.store.ann.types import F32, I64, IndexSettings

log = logging.getLogger(__name__)

#: Vectors read (under the owner's lock) and inserted per step of the build.
BLOCK = 1_024
#: Queued keys few enough to replay while holding the owner's lock, at the install.
FINAL_REPLAY = 256

#: A queued write: keys and their new vectors, or keys removed (``None``).
Write = tuple[I64, F32 | None]

#: How long the exit hook waits for each running build to reach its next step.
EXIT_WAIT_S = 30.0

_running: weakref.WeakSet[GraphBuild] = weakref.WeakSet()


class GraphBuild:
    """One background build of a graph over ``keys`` (a snapshot of the scope's keys when it started).

    ``lock`` is the owner's lock; ``read(keys)`` (called under it) returns the keys still held among ``keys`` and
    their vectors; ``install(build, graph)`` (called under it) puts the finished graph in place of the exact
    vectors; ``forked()`` is called in a child forked mid-build (to replace the lock, which the vanished thread may
    hold). The owner appends every write made after the snapshot to ``queued`` (under its lock).
    """

    def __init__(
        self,
        dim: int,
        settings: IndexSettings,
        keys: I64,
        *,
        lock: threading.Lock,
        read: Callable[[I64], tuple[I64, F32]],
        install: Callable[[GraphBuild, HnswVectors], None],
        forked: Callable[[], None] | None = None,
    ) -> None:
        self.dim = dim
        self.settings = settings
        self.keys = keys
        self.queued: list[Write] = []
        self.error: BaseException | None = None
        self._lock = lock
        self._read = read
        self._install = install
        self._forked = forked
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memlane-graph-build", daemon=True)

    def start(self) -> None:
        _running.add(self)
        self._thread.start()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def stop(self) -> None:
        """Abandon the build (it ends at its next step; nothing is installed)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build has ended (installed, stopped or failed); whether it has."""
        return self._done.wait(timeout)

    def _run(self) -> None:
        try:
            graph = HnswVectors(self.dim, self.settings)
            for start in range(0, len(self.keys), BLOCK):
                if self._stop.is_set():
                    return
                with self._lock:
                    present, vectors = self._read(self.keys[start : start + BLOCK])
                graph.add(present, vectors, threads=self.settings.build_threads)
            if not self._stop.is_set():
                graph.relay()
            while not self._stop.is_set():
                with self._lock:
                    if self._stop.is_set():
                        return
                    writes, self.queued = self.queued, []
                    if sum(len(keys) for keys, _ in writes) <= FINAL_REPLAY:  # keys, not writes: one may hold 50k
                        replay(graph, writes, threads=1)  # few, under the lock: on this thread
                        self._install(self, graph)
                        return
                replay(graph, writes, threads=self.settings.build_threads, stop=self._stop)
        except Exception as exc:  # the exact vectors keep serving; the owner sees ``error``
            self.error = exc
            log.warning("building the vector graph failed; exact search goes on serving: %s", exc)
        finally:
            self._done.set()


def replay(graph: HnswVectors, writes: list[Write], *, threads: int, stop: threading.Event | None = None) -> None:
    """Apply queued writes to the graph, in order (until ``stop`` is set, if given), inserting on ``threads``."""
    for keys, vectors in writes:
        if stop is not None and stop.is_set():
            return
        if vectors is None:
            graph.remove(keys)
        else:
            graph.add(keys, vectors, threads=threads)


def _orphaned_in_child() -> None:
    """After ``fork``: the child has no build threads; their builds are over there (exact search keeps serving)."""
    for build in list(_running):
        if not build.done:
            build.error = RuntimeError("the process was forked while this graph was being built")
            build.queued = []
            build._stop.set()
            build._done.set()
            if build._forked is not None:  # the owner's lock may be held by the thread that is gone: a new one
                build._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_orphaned_in_child)


@atexit.register
def _stop_all() -> None:
    """Stop the builds still running and wait for each to leave usearch's code before the interpreter goes."""
    builds = list(_running)
    for build in builds:
        build.stop()
    for build in builds:
        build.wait(EXIT_WAIT_S)
