"""The SQLite store's vector search through its per-user index: log-fed, saved beside the file, repaired on open."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder
from memlane.models import Filters

WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "violin",
    "garden",
    "pepper",
    "rocket",
    "maple",
    "harbour",
    "lantern",
    "meadow",
    "copper",
    "falcon",
]


def texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 5)) + f" note {i}" for i in range(n)]


def scores(db: Path, user: str, q: np.ndarray) -> dict[str, float]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT m.id, v.vec FROM vectors v JOIN memories m ON m.pk = v.pk WHERE v.user_id = ?", (user,)
        ).fetchall()
    return {i: float(np.frombuffer(v, dtype=np.float32) @ q) for i, v in rows}


def assert_exact(got: list[tuple[str, float]], db: Path, user: str, q: np.ndarray, k: int) -> None:
    """``got`` is an exact top ``k`` (ties broken either way): the true scores of its ids, the best ``k`` of all."""
    truth = scores(db, user, q)
    assert len(got) == min(k, len(truth))
    assert [s for _, s in got] == pytest.approx([truth[i] for i, _ in got], abs=1e-5)
    assert [s for _, s in got] == pytest.approx(sorted(truth.values(), reverse=True)[:k], abs=1e-5)


def open_memory(db: Path | str, tmp: Path) -> Memory:
    return Memory(db, embedder=HashEmbedder(), config=Config(data_dir=tmp / "home", embedder="hash", infer=False))


def test_search_follows_writes_and_deletes_and_is_saved_beside_the_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as memory:
        ids = [it.id for it in memory.add(texts(60), user_id="u").items]
        q = HashEmbedder().embed_query("apple river stone")
        store = memory._store
        assert_exact(store.vector_search("u", q, 5, Filters()), db, "u", q, 5)
        gone = store.vector_search("u", q, 1, Filters())[0][0]
        memory.delete(gone, user_id="u")
        got = store.vector_search("u", q, 5, Filters())
        assert gone not in [i for i, _ in got]
        assert_exact(got, db, "u", q, 5)
        scores = store.vector_scores("u", q, [ids[3], gone])
        assert list(scores) == ([ids[3]] if ids[3] != gone else [])
        narrow = store.vector_search("u", q, 10, Filters(metadata={"none": "x"}))
        assert narrow == []
    folders = list((tmp_path / "m.db.ann").iterdir())
    assert len(folders) == 1
    meta = json.loads((folders[0] / "meta.json").read_text())
    assert meta["count"] == 59
    with sqlite3.connect(db) as conn:  # the saved part of the log is pruned
        assert conn.execute("SELECT count(*) FROM vector_log").fetchone()[0] == 0


def test_a_write_by_another_connection_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as a, open_memory(db, tmp_path) as b:
        a.add(texts(10), user_id="u")
        q = HashEmbedder().embed_query("falcon harbour")
        assert len(a._store.vector_search("u", q, 50, Filters())) == 10
        b.add("falcon harbour falcon harbour", user_id="u")
        top = a._store.vector_search("u", q, 1, Filters())
        assert a.get(top[0][0], user_id="u").text == "falcon harbour falcon harbour"


def test_an_unchanged_database_is_not_asked_again(tmp_path: Path) -> None:
    """Between writes, a vector lookup checks one pragma, not the identity and change log; a write is caught up."""
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as memory:
        memory.add(texts(10), user_id="u")
        q = HashEmbedder().embed_query("falcon harbour")
        memory._store.vector_search("u", q, 5, Filters())  # opens the index (and saves it: a write)
        memory._store.vector_search("u", q, 5, Filters())  # catches up with that write
        asked: list[str] = []
        memory._store._db.conn.set_trace_callback(asked.append)
        memory._store.vector_search("u", q, 5, Filters())
        memory._store.vector_scores("u", q, ["no such id"])
        assert not [s for s in asked if "vector_log" in s or "FROM meta" in s]
        memory.add("falcon harbour falcon harbour", user_id="u")  # the write moves the generation
        assert any("vector_log" in s for s in asked)  # and the index catches up with the change log
        top = memory._store.vector_search("u", q, 1, Filters())
        assert memory.get(top[0][0], user_id="u").text == "falcon harbour falcon harbour"


def _writer(db: Path, tmp: Path, ready: multiprocessing.synchronize.Event) -> None:
    memory = open_memory(db, tmp)
    memory.add(texts(40), user_id="u")
    memory._store.vector_search("u", HashEmbedder().embed_query("apple"), 3, Filters())  # index opened and saved
    memory.add(texts(25, seed=1), user_id="u")  # committed; the index file never gets these
    first = memory.search("apple", user_id="u", top_k=1)
    memory.delete(first[0].memory.id, user_id="u")
    ready.set()
    signal.pause()


def test_a_process_killed_after_its_commits_is_repaired_on_open(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    db = tmp_path / "m.db"
    child = ctx.Process(target=_writer, args=(db, tmp_path, ready))
    child.start()
    try:
        assert ready.wait(120)
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL
    with sqlite3.connect(db) as conn:
        behind = conn.execute("SELECT count(*) FROM vector_log").fetchone()[0]
    assert behind >= 26  # the commits the saved index lacks are in the log
    with open_memory(db, tmp_path) as memory:
        q = HashEmbedder().embed_query("apple river")
        assert_exact(memory._store.vector_search("u", q, 8, Filters()), db, "u", q, 8)
        assert len(memory._store.vector_search("u", q, 1000, Filters())) == 64


@pytest.mark.parametrize("where", [":memory:", "file"])
def test_memory_and_file_stores_agree(tmp_path: Path, where: str) -> None:
    db: Path | str = ":memory:" if where == ":memory:" else tmp_path / "m.db"
    with open_memory(db, tmp_path) as memory:
        memory.add(texts(30), user_id="u")
        memory.add(texts(5, seed=3), user_id="v")
        q = HashEmbedder().embed_query("copper meadow")
        assert len(memory._store.vector_search("u", q, 100, Filters())) == 30
        assert len(memory._store.vector_search("v", q, 100, Filters())) == 5
    assert (tmp_path / "m.db.ann").exists() == (where == "file")


def test_an_unwritable_index_folder_leaves_search_working(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    (tmp_path / "m.db.ann").write_text("a file where the folder should be")
    with open_memory(db, tmp_path) as memory:
        memory.add(texts(12), user_id="u")
        q = HashEmbedder().embed_query("violin garden")
        assert_exact(memory._store.vector_search("u", q, 4, Filters()), db, "u", q, 4)
