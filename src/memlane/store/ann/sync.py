"""Opening a scope's index in step with its owner: load the saved file, then replay or rebuild from the feed.

The protocol (``ChangeFeed`` in ``types``): the owner commits each vector write together with a change-log row
carrying a growing sequence, then applies the same change to the open index (``VectorIndex.add/remove(seq=...)``).
The saved file records the last sequence it holds. On open:

1. no usable file (missing, torn, another format, model or dimension) → rebuild from ``feed.snapshot()``;
2. file ahead of the feed's head (the database was restored or replaced) → rebuild;
3. file behind (a crash after a commit and before a save, or simply no save since) → replay
   ``feed.changes_since(applied_seq)``; if the log no longer reaches back that far → rebuild;
4. otherwise the file is current and used as it is.

Whatever was repaired is saved at once, so the next open is a plain load (a graph left holding replayed removals'
vectors is compacted on a background thread first; its owner saves it once that is done).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from memlane.store.ann.index import VectorIndex
from memlane.store.ann.types import F32, Change, ChangeFeed, IndexSettings


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What opening an index did: ``loaded`` as saved, ``replayed`` missed changes, or ``rebuilt`` it whole."""

    action: Literal["loaded", "replayed", "rebuilt"]
    reason: str
    replayed: int = 0


def rebuild(
    feed: ChangeFeed, dim: int, identity: str, settings: IndexSettings | None, folder: Path | None
) -> VectorIndex:
    """A new index holding the feed's snapshot, at the snapshot's sequence."""
    seq, batches = feed.snapshot()
    index = VectorIndex(dim, identity, settings, folder=folder)
    with index.deferred():  # the graph (if the scope needs one) is built once, over all of it
        for batch in batches:
            if len(batch.keys):
                index.add(batch.keys, batch.vectors)
    index.applied_seq = seq
    return index


def open_index(
    feed: ChangeFeed,
    dim: int,
    identity: str,
    *,
    folder: Path | None,
    settings: IndexSettings | None = None,
    save: bool = True,
) -> tuple[VectorIndex, SyncReport]:
    """The scope's index, current with ``feed``; ``folder=None`` keeps it in memory only (built from the feed)."""
    if folder is None:
        return rebuild(feed, dim, identity, settings, None), SyncReport("rebuilt", "kept in memory only")
    loaded, why = VectorIndex.load(folder, dim, identity, settings)
    head = feed.head()
    if loaded is not None and loaded.applied_seq > head:
        why = f"the saved index is at change {loaded.applied_seq}, the database at {head}"
        loaded = None
    if loaded is not None and loaded.applied_seq == head:
        return loaded, SyncReport("loaded", "current")
    if loaded is not None:
        start = loaded.applied_seq
        changes = feed.changes_since(start)
        if changes is None:
            why = f"the change log no longer reaches back to change {start}"
        else:
            n = apply_changes(loaded, changes)
            loaded.applied_seq = max(loaded.applied_seq, head)
            if save:
                loaded.save()
            return loaded, SyncReport("replayed", f"the saved index was at change {start}, the database at {head}", n)
    index = rebuild(feed, dim, identity, settings, folder)
    report = SyncReport("rebuilt", why)
    if save:
        index.save()
    return index, report


def apply_changes(index: VectorIndex, changes: Iterable[Change]) -> int:
    """Apply feed changes to ``index`` in order, skipping those at or below its ``applied_seq``; how many were
    applied.

    Consecutive adds are batched into one insert, so replaying a long log costs about what a batch build does.
    """
    applied = 0
    run_keys: list[int] = []
    run_vecs: list[F32] = []
    in_run: set[int] = set()
    run_seq = 0

    def flush() -> None:
        if run_keys:
            index.add(run_keys, np.stack(run_vecs), seq=run_seq)
            run_keys.clear()
            run_vecs.clear()
            in_run.clear()

    with index.deferred():  # a long log that takes the scope past exact_below: one graph build, at its end
        for change in changes:
            if change.seq <= max(index.applied_seq, run_seq):
                continue
            applied += 1
            if change.vector is None:
                flush()
                index.remove([change.key], seq=change.seq)
                continue
            if change.key in in_run:  # replaced again inside the run: the earlier vector must land first
                flush()
            run_keys.append(change.key)
            run_vecs.append(change.vector)
            in_run.add(change.key)
            run_seq = change.seq
        flush()
    return applied
