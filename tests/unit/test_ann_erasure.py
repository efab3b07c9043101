"""Erasure reaches the vector index files beside the database, across processes' leftovers too."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory
from memlane.errors import ValidationError
from memlane.store.ann import IndexSettings, sync
from memlane.store.sqlite import ann_feed
from tests.vector_bytes import holds_any


def _index_bytes(db: Path) -> bytes:
    root = Path(f"{db}.ann")
    if not root.exists():
        return b""
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_delete_and_delete_all_leave_no_saved_vector(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        ids = [m.add(f"note number {i} about the red kite", user_id="ana").items[0].id for i in range(5)]
        m.add("bob's own note", user_id="bob")
        m.search("kite", user_id="ana")
    with Memory(db, embedder="hash") as m:
        victim = m.get(ids[2], user_id="ana")
        vec = m.embedder.embed([f"{victim.text}"])[0].astype("float32").tobytes()
        m.search("kite", user_id="ana")
        m.delete(ids[2], user_id="ana")
        assert vec not in _index_bytes(db)
    assert vec not in _index_bytes(db)  # nor in what close() saved
    with Memory(db, embedder="hash") as m:
        assert m.search("kite", user_id="ana")
        assert (Path(f"{db}.ann") / hashlib.sha256(b"ana").hexdigest()[:24]).exists()
        m.delete_all(user_id="ana")
        ana = Path(f"{db}.ann") / hashlib.sha256(b"ana").hexdigest()[:24]
        assert not ana.exists()
        assert m.search("kite", user_id="ana") == []


def test_an_orphan_index_folder_is_swept_on_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        m.add("a note", user_id="ana")
        m.search("note", user_id="ana")
    orphan = Path(f"{db}.ann") / ("0" * 24)
    orphan.mkdir(parents=True)
    (orphan / "meta.json").write_text("{}")
    with Memory(db, embedder="hash"):
        assert not orphan.exists()


def test_delete_all_leaves_no_byte_of_the_users_text_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        for i in range(40):
            m.add(f"filler turn {i} about gardening and the weather", user_id="bob", infer=False)
        m.add(["My locker code is quixotrelzz.", "Noted, quixotrelzz it is."], user_id="ana", infer=False)
        m.search("quixotrelzz", user_id="ana")
        m.delete_all(user_id="ana")
    # closed: the WAL is checkpointed into the file; neither the rows, the full-text index nor a vector file keeps it
    assert b"quixotrelzz" not in db.read_bytes()
    assert b"quixotrelzz" not in _index_bytes(db)


def _file_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())


def test_erased_text_leaves_the_write_ahead_log_while_the_store_stays_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder="hash") as m:
        for i in range(40):
            m.add(f"filler turn {i} about gardening and the weather", user_id="bob", infer=False)
        m.add(["My locker code is quixotrelzz.", "Noted, quixotrelzz it is."], user_id="ana", infer=False)
        gone = m.add("My bike lock is vorpalbrix.", user_id="bob", infer=False).items[0].id
        assert b"quixotrelzz" in _file_bytes(db) and b"vorpalbrix" in _file_bytes(db)
        m.delete_all(user_id="ana")
        m.delete(gone, user_id="bob")
        # still open (a server between requests): no file of the store, the WAL included, holds either text
        assert b"quixotrelzz" not in _file_bytes(db)
        assert b"vorpalbrix" not in _file_bytes(db)
        assert m.search("gardening", user_id="bob")  # the store works on


def _word(i: int) -> str:
    return "".join("abcdefghij"[int(d)] for d in str(i)) + "zq"


def test_a_graph_scope_builds_in_the_background_and_a_delete_leaves_no_saved_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store's scopes switch to the graph at 200 vectors here (50,000 by default), so that the background build,
    # wait_for_index and the closing save of a graph that held the deleted vector run end to end through Memory.
    small = IndexSettings(exact_below=200, filter_exact_max=50, expansion_search=64)

    def small_index(*args: Any, settings: IndexSettings | None = None, **kwargs: Any) -> Any:
        return sync.open_index(*args, settings=small, **kwargs)  # whatever the store asks for

    monkeypatch.setattr(ann_feed, "open_index", small_index)
    db = tmp_path / "m.db"
    meta = Path(f"{db}.ann") / hashlib.sha256(b"ana").hexdigest()[:24] / "meta.json"
    with Memory(db, embedder="hash") as m:
        texts = [f"kite note {_word(i)}" for i in range(300)]
        ids = [it.id for it in m.add(texts, user_id="ana", infer=False).items]
        vecs = [m.embedder.embed([t])[0].astype("float32") for t in texts]
        raw = [v.tobytes() for v in vecs]
        v = next(i for i, b in enumerate(raw) if raw.count(b) == 1)  # a vector no other memory shares
        assert m.search(texts[v], user_id="ana")  # served (exactly) while the graph is built
        assert m.wait_for_index(60)
        assert json.loads(meta.read_text())["kind"] == "hnsw"  # the graph, saved once it replaced the exact vectors
        vec = vecs[v]
        assert raw[v] in _index_bytes(db)  # the float32 rows beside the graph
        m.delete(ids[v], user_id="ana")
        assert not holds_any(_index_bytes(db), vec)  # in float32, bf16 or f16
        assert ids[v] not in [h.memory.id for h in m.search(texts[v], user_id="ana", top_k=20)]
    assert not holds_any(_index_bytes(db), vec)  # the closing save wrote no graph that still held it
    with Memory(db, embedder="hash") as m:
        assert m.search(texts[v], user_id="ana", top_k=20) and m.stats().memories == 299
        assert m.wait_for_index(60)
        assert json.loads(meta.read_text())["kind"] == "hnsw" and not holds_any(_index_bytes(db), vec)
    with pytest.raises(ValidationError, match="timeout"):
        Memory(db, embedder="hash").wait_for_index(-1)
