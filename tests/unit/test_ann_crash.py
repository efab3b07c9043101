"""A process killed between the database commit and the index save: reopening detects the gap and repairs it."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from memlane.store.ann import IndexSettings, VectorIndex, apply_changes, open_index
from tests.unit.test_ann_index import DIM, SqliteFeed, exact, unit_rows

SETTINGS = IndexSettings(exact_below=300, filter_exact_max=50)
N = 900


def save_when_compacted(index: VectorIndex) -> None:
    """Save as an owner does: a graph holding removed vectors is compacted in the background first, then saved."""
    for _ in range(5):
        if index.save() is not None:
            return
        index.wait_built()
    raise AssertionError("the index was never saved")


def writer(db: Path, folder: Path, committed: multiprocessing.synchronize.Event, mode: str) -> None:
    """Apply batches (commit, then index), saving after some; after the last commit, wait to be killed."""
    feed = SqliteFeed(db)
    index, _ = open_index(feed, DIM, "m", folder=folder, settings=SETTINGS)
    x = unit_rows(N)
    for b, lo in enumerate(range(0, N, 100)):
        changes = feed.write({k: x[k] for k in range(lo, lo + 100)}, deletes=[lo - 50] if lo else [])
        if mode == "applied" or b < 5:
            apply_changes(index, changes)
        if b in (2, 4):
            save_when_compacted(index)
    committed.set()
    signal.pause()  # killed here: committed in SQLite, never saved (and, in "lost" mode, never applied either)


@pytest.mark.parametrize("mode", ["applied", "lost"])
def test_sigkill_between_commit_and_save_is_repaired_on_open(tmp_path: Path, mode: str) -> None:
    ctx = multiprocessing.get_context("fork")
    committed = ctx.Event()
    db, folder = tmp_path / "db.sqlite", tmp_path / "ann"
    child = ctx.Process(target=writer, args=(db, folder, committed, mode))
    child.start()
    try:
        assert committed.wait(120), "the writer never reached its last commit"
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL

    feed = SqliteFeed(db)
    held = feed.vectors()
    assert len(held) == N - 8  # nine batches of 100, eight deletes
    index, report = open_index(feed, DIM, "m", folder=folder, settings=SETTINGS)
    assert report.action == "replayed" and report.replayed == 4 * 101
    assert index.applied_seq == feed.head() and len(index) == len(held)
    for q in unit_rows(20, seed=9):
        got = [h.key for h in index.search(q, 10)]
        want = exact(held, q, 10)
        assert len(set(got) & set(want)) >= 8
        scores = index.scores(q, want)
        assert [h.score for h in scores] == pytest.approx([float(held[k] @ q) for k in want], abs=1e-5)
    deleted = {lo - 50 for lo in range(100, N, 100)}
    assert not deleted & {h.key for q in unit_rows(20, seed=9) for h in index.search(q, 50)}
    # The repair saved at once, or (a graph left holding the replayed removals) started compacting it in the
    # background for its owner to save when done; on a busy machine that may still be running here.
    save_when_compacted(index)
    reopened, report = open_index(feed, DIM, "m", folder=folder, settings=SETTINGS)
    assert report.action == "loaded" and len(reopened) == len(held)
    assert np.isclose(len(reopened), N - 8)
