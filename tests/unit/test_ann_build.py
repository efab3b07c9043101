"""The graph of a scope that outgrows exact search is built on a background thread: exact search serves meanwhile,
and every write made during the build is in the graph that replaces it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane.store.ann import Change, IndexSettings, VectorIndex, apply_changes
from memlane.store.ann import build as build_module
from memlane.store.ann.hnsw import HnswVectors
from tests.unit.test_ann_index import DIM, exact, unit_rows

SMALL = IndexSettings(exact_below=200, filter_exact_max=50, expansion_search=64)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Hold the background build at its first insert (outside the index's lock) until the event is set."""
    opened = threading.Event()
    plain = HnswVectors.add

    def held_add(self: HnswVectors, keys: Any, vectors: Any, *, threads: int | None = None) -> None:
        if threading.current_thread().name == "memlane-graph-build":
            assert opened.wait(30), "the test never opened the gate"
        plain(self, keys, vectors, threads=threads)

    monkeypatch.setattr(HnswVectors, "add", held_add)
    monkeypatch.setattr(build_module, "BLOCK", 100)  # several blocks, so writes land between reads
    yield opened
    opened.set()


def graph_then_gate_closed(folder: Path, x: np.ndarray, gate: threading.Event) -> VectorIndex:
    """An index of ``x`` whose graph is built, with the gate closed again (the next build waits at its first insert)."""
    index = VectorIndex(DIM, "t", SMALL, folder=folder)
    gate.set()
    index.add(range(len(x)), x)
    assert index.wait_built(30) and index.kind == "hnsw"
    gate.clear()
    return index


def test_exact_search_serves_during_the_build_and_every_write_reaches_the_graph(gate: threading.Event) -> None:
    x = unit_rows(700)
    held = {k: x[k] for k in range(600)}
    index = VectorIndex(DIM, "t", SMALL)
    index.add(range(600), x[:600], seq=1)
    assert index.building and index.kind == "exact"
    for q in unit_rows(10, seed=5):  # exact while the graph is built: nothing missed
        assert [h.key for h in index.search(q, 10)] == exact(held, q, 10)
    # Writes during the build: removals (one in an unread block), a replacement, new keys.
    index.remove([5, 350], seq=2)
    index.add([3], -x[0], seq=3)
    index.add(range(600, 700), x[600:700], seq=4)
    for k in (5, 350):
        del held[k]
    held[3] = -x[0]
    held.update({k: x[k] for k in range(600, 700)})
    assert [h.key for h in index.search(-x[0], 1)] == [3]
    gate.set()
    assert index.wait_built(30)
    assert index.kind == "hnsw" and not index.building and index.applied_seq == 4
    assert len(index) == len(held) == 698 and 5 not in index and 350 not in index
    assert index.search(-x[0], 1)[0].key == 3
    assert all(index.search(x[k], 1)[0].key == k for k in range(600, 700, 7))
    overlap = [len({h.key for h in index.search(q, 10)} & set(exact(held, q, 10))) / 10 for q in unit_rows(30, 6)]
    assert np.mean(overlap) >= 0.95


def test_a_large_queued_write_is_replayed_outside_the_lock(
    gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the last few queued keys are replayed while searches wait on the lock; a bulk write queued during the
    # build (one write, many keys) is replayed with the lock free.
    x = unit_rows(1_900)
    index = VectorIndex(DIM, "t", SMALL)
    calls: list[tuple[int, bool]] = []
    plain = build_module.replay

    def watched(graph: HnswVectors, writes: list[Any], **kw: Any) -> None:
        calls.append((sum(len(k) for k, _ in writes), index._lock.locked()))
        plain(graph, writes, **kw)

    monkeypatch.setattr(build_module, "replay", watched)
    index.add(range(600), x[:600])
    index.add(range(600, 1_900), x[600:])  # one write of 1,300 keys, queued
    gate.set()
    assert index.wait_built(30) and index.kind == "hnsw" and len(index) == 1_900
    assert all(n <= build_module.FINAL_REPLAY for n, locked in calls if locked)
    assert any(n == 1_300 and not locked for n, locked in calls)


def test_a_stopped_build_installs_nothing(gate: threading.Event) -> None:
    index = VectorIndex(DIM, "t", SMALL)
    index.add(range(600), unit_rows(600))
    assert index.building
    index.stop_build()
    gate.set()
    assert index.wait_built(30)
    assert index.kind == "exact" and not index.building and len(index) == 600


def test_a_scope_shrunk_during_the_build_stays_exact(gate: threading.Event) -> None:
    x = unit_rows(600)
    index = VectorIndex(DIM, "t", SMALL)
    index.add(range(600), x)
    build = index._build
    assert build is not None
    index.remove(range(520))  # 80 left, under half of exact_below
    gate.set()
    assert build.wait(30) and build.error is None
    assert index.kind == "exact" and len(index) == 80
    held = {k: x[k] for k in range(520, 600)}
    assert [h.key for h in index.search(x[550], 10)] == exact(held, x[550], 10)


def test_an_exact_file_saved_mid_build_builds_again_when_loaded(tmp_path: Path, gate: threading.Event) -> None:
    x = unit_rows(600)
    index = VectorIndex(DIM, "m", SMALL, folder=tmp_path)
    index.add(range(600), x, seq=7)
    meta = index.save()
    assert meta is not None and meta.kind == "exact" and meta.count == 600
    index.stop_build()
    gate.set()
    loaded, why = VectorIndex.load(tmp_path, DIM, "m", SMALL)
    assert loaded is not None, why
    assert loaded.wait_built(30) and loaded.kind == "hnsw"
    assert loaded.needs_save  # the file still holds exact vectors: the owner saves the graph
    saved = loaded.save()
    assert saved is not None and saved.kind == "hnsw" and not loaded.needs_save
    assert loaded.search(x[9], 1)[0].key == 9


def test_a_failed_build_leaves_exact_search_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: HnswVectors, keys: Any, vectors: Any, *, threads: int | None = None) -> None:
        raise MemoryError("no room for the graph")

    monkeypatch.setattr(HnswVectors, "add", broken)
    x = unit_rows(300)
    index = VectorIndex(DIM, "t", SMALL)
    index.add(range(300), x)
    build = index._build
    assert build is not None and build.wait(30)
    assert isinstance(build.error, MemoryError)
    assert index.kind == "exact" and index.search(x[4], 1)[0].key == 4
    index.add([1_000], x[:1])  # not queued for a build that is over, nor tried again at once
    assert not build.queued and index._build is build and index.search(x[0], 1)[0].key in (0, 1_000)


def test_without_background_builds_the_switch_is_immediate() -> None:
    index = VectorIndex(DIM, "t", SMALL.model_copy(update={"background_build": False}))
    index.add(range(300), unit_rows(300))
    assert index.kind == "hnsw" and not index.building


def test_a_process_that_exits_mid_build_exits_cleanly(tmp_path: Path) -> None:
    # A thread still inside usearch's C++ code when the interpreter finalises aborts the process ("terminate
    # called without an active exception", exit status 134): the exit hook stops and waits for running builds.
    script = tmp_path / "exit_mid_build.py"
    script.write_text(
        "import time\n"
        "import numpy as np\n"
        "from memlane.store.ann import IndexSettings, VectorIndex\n"
        "x = np.random.default_rng(0).normal(size=(20_000, 64)).astype(np.float32)\n"
        "index = VectorIndex(64, 't', IndexSettings(exact_below=1_000))\n"
        "index.add(range(20_000), x)\n"
        "time.sleep(0.2)  # the thread is inside usearch's insert by now\n"
        "assert index.building\n"
        "print('exiting mid-build', flush=True)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "exiting mid-build" in done.stdout and "terminate" not in done.stderr


def test_a_graph_with_removed_vectors_is_compacted_in_the_background_and_keeps_every_write(
    tmp_path: Path, gate: threading.Event
) -> None:
    x = unit_rows(700)
    index = graph_then_gate_closed(tmp_path, x[:600], gate)  # the compaction waits at its first insert
    index.remove([5])
    assert index.save() is None and index.building  # the old graph still holds vector 5's bytes: compact first
    old_three = x[3].tobytes()
    index.remove([9])
    index.add([3], -x[0])
    index.add(range(600, 650), x[600:650])
    assert index.search(x[9], 1)[0].key != 9 and index.search(x[620], 1)[0].key == 620  # the old graph serves
    gate.set()
    assert index.wait_built(30) and index.kind == "hnsw"
    for _ in range(3):  # writes replayed onto the new graph may leave a replaced vector to compact once more
        meta = index.save()
        if meta is not None:
            break
        assert index.wait_built(30)
    assert meta is not None and meta.count == 648  # 600 - 2 removed + 50 added
    data = (tmp_path / meta.data_file).read_bytes()
    assert x[5].tobytes() not in data and x[9].tobytes() not in data and old_three not in data
    assert index.search(-x[0], 1)[0].key == 3 and all(index.search(x[k], 1)[0].key == k for k in range(600, 650, 7))


def test_a_closing_save_starts_no_compaction(tmp_path: Path) -> None:
    x = unit_rows(600)
    index = VectorIndex(DIM, "t", SMALL, folder=tmp_path)
    index.add(range(600), x)
    assert index.wait_built(30)
    index.remove([5])
    assert index.save(closing=True) is None and not index.building


def test_a_child_forked_mid_build_keeps_exact_search(gate: threading.Event) -> None:
    x = unit_rows(600)
    index = VectorIndex(DIM, "t", SMALL)
    index.add(range(600), x)
    assert index.building
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no build thread; its index must not wait for one nor queue writes for it
        ok = index.wait_built(5) and not index.building and index.kind == "exact"
        index.add([1_000], x[:1])
        ok = ok and index.search(x[5], 1)[0].key == 5 and 1_000 in index
        os.write(write, b"ok" if ok else b"no")
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 30)
    got = os.read(read, 2) if ready else b"hung"
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    gate.set()
    assert got == b"ok"
    assert index.wait_built(30) and index.kind == "hnsw"  # the parent's build went on


def test_a_compacted_graph_with_replayed_removals_does_not_ask_to_be_saved(
    tmp_path: Path, gate: threading.Event
) -> None:
    # Writes replayed onto a compacted graph can leave removed vectors in it; asking for a save then would start the
    # next compaction at once (back to back under a steady stream of deletes): it waits for the usual cadence.
    x = unit_rows(600)
    index = graph_then_gate_closed(tmp_path, x, gate)
    index.remove([5])
    assert index.save() is None and index.building
    index.add([7], -x[7])  # replaced during the compaction: the new graph gets it by replay, over the old vector
    gate.set()
    assert index.wait_built(30) and index.kind == "hnsw"
    assert not index.needs_save


def test_a_bulk_load_builds_the_graph_once_over_all_of_it(gate: threading.Event) -> None:
    # A rebuild or a replayed log that takes a scope past exact_below: the build starts at the end, over every
    # vector, rather than at the switch size with the rest queued (a copy of each) for replay.
    x = unit_rows(900)
    index = VectorIndex(DIM, "t", SMALL)
    with index.deferred():
        for lo in range(0, 900, 100):
            index.add(range(lo, lo + 100), x[lo : lo + 100])
        assert not index.building  # not yet: the load goes on
    build = index._build
    assert build is not None and len(build.keys) == 900 and not build.queued
    changes = [Change(seq, 1_000 + seq, x[seq % 900]) for seq in range(1, 401)]
    other = VectorIndex(DIM, "t", SMALL)
    assert apply_changes(other, changes) == 400
    assert other._build is not None and len(other._build.keys) == 400 and not other._build.queued
    gate.set()
    assert index.wait_built(30) and other.wait_built(30) and index.kind == other.kind == "hnsw"


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_a_relaid_graph_answers_exactly_as_before_and_takes_writes(dtype: str) -> None:
    x = unit_rows(600, seed=7)
    settings = IndexSettings(exact_below=200, expansion_search=64, graph_dtype=dtype)
    graph = HnswVectors.build(DIM, settings, np.arange(600, dtype=np.int64), x[:600])
    graph.remove(np.array([3, 4], dtype=np.int64))
    queries = unit_rows(20, seed=8)
    before = [graph.search(q, 10) for q in queries]
    built = graph._index
    graph.relay()
    assert graph._index is not built  # read back into a new index, not left as it was
    assert len(graph) == 598 and 3 not in graph and 5 in graph
    for q, (keys, scores) in zip(queries, before, strict=True):
        again_keys, again_scores = graph.search(q, 10)
        assert again_keys.tolist() == keys.tolist() and np.array_equal(again_scores, scores)
    graph.add(np.array([3], dtype=np.int64), x[3:4])  # the relaid graph takes writes as before
    assert graph.search(x[3], 1)[0].tolist() == [3]
