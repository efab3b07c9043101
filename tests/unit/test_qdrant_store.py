"""SQLite + Qdrant (local mode): a write that reached one side and not the other is repaired, erasure reaches Qdrant,
filters select inside Qdrant exactly what SQLite selects, and the URL forms.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("qdrant_client", reason="memlane[qdrant] is not installed: pip install -e '.[dev]'")

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from memlane import Config, ConfigError, Filters, Memory, MemoryKind
from memlane.embedding.fake import HashEmbedder
from memlane.models import HistoryEntry, HistoryEvent, MemoryItem
from memlane.store import open_store
from memlane.store.qdrant import parse_target
from memlane.store.qdrant.mirror import QdrantMirror
from memlane.store.qdrant.store import SQLiteQdrantStore
from memlane.store.sqlite import SQLiteStore

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def url(db: Path) -> str:
    return f"sqlite:///{db}?vectors=qdrant+local"


def open_memory(db: Path, tmp: Path) -> Memory:
    return Memory(url(db), embedder=HashEmbedder(), config=Config(data_dir=tmp / "home", embedder="hash", infer=False))


def points(db: Path, user_id: str | None = None) -> list[Any]:
    """Every point Qdrant holds for the database (of one user), read with a client of its own."""
    store = open_store(url(db))
    assert isinstance(store, SQLiteQdrantStore)
    name = store.vectors.collection
    store.close()
    client = QdrantClient(path=str(db) + ".qdrant")
    try:
        if name is None or not client.collection_exists(name):
            return []
        flt = None
        if user_id is not None:
            flt = qm.Filter(must=[qm.FieldCondition(key="user_id", match=qm.MatchValue(value=user_id))])
        return client.scroll(name, scroll_filter=flt, limit=10_000, with_vectors=True)[0]
    finally:
        client.close()


def _killed_writer(db: str, tmp: str, where: str, reached: Any) -> None:
    """Write, and die (SIGKILL from the test) right after SQLite committed, before Qdrant heard of it."""

    def stop(*_: object, **__: object) -> None:
        reached.set()
        signal.pause()

    with open_memory(Path(db), Path(tmp)) as m:
        m.add("the first note about gardening", user_id="u")
        if where == "write":
            QdrantMirror.sync = stop  # type: ignore[method-assign]
            m.add("a sailing trip to Crete in May", user_id="u")
        else:
            QdrantMirror.forget = stop  # type: ignore[method-assign]
            m.delete_all(user_id="u")


def _kill_between(tmp_path: Path, db: Path, where: str) -> None:
    ctx = multiprocessing.get_context("fork")
    reached = ctx.Event()
    child = ctx.Process(target=_killed_writer, args=(str(db), str(tmp_path), where, reached))
    child.start()
    try:
        assert reached.wait(120), "the writer never reached its commit"
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL


def test_a_process_killed_after_the_sqlite_commit_is_repaired_on_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _kill_between(tmp_path, db, "write")
    store = SQLiteStore(db)
    assert store.count("u") == 2  # SQLite has both
    store.close()
    client = QdrantClient(path=str(db) + ".qdrant")
    (name,) = [c.name for c in client.get_collections().collections]
    assert client.count(name).count == 1  # Qdrant missed the second
    client.close()
    with open_memory(db, tmp_path) as m:
        q = m.embedder.embed(["a sailing trip to Crete in May"])[0]
        (best, score), _ = m._store.vector_search("u", q, 2, Filters())
        assert m.get(best, user_id="u").text == "a sailing trip to Crete in May" and score > 0.99
    assert len(points(db, "u")) == 2


def test_a_delete_all_killed_before_reaching_qdrant_is_finished_on_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _kill_between(tmp_path, db, "delete_all")
    client = QdrantClient(path=str(db) + ".qdrant")
    (name,) = [c.name for c in client.get_collections().collections]
    assert client.count(name).count == 1  # the deleted user's vector is still in Qdrant
    client.close()
    store = open_store(url(db))
    assert isinstance(store, SQLiteQdrantStore)
    assert store.count("u") == 0
    store.close()
    assert points(db) == []


def test_a_failed_qdrant_write_keeps_the_memory_and_is_applied_at_the_next_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as m:
        m.add("the first note about gardening", user_id="u")
        client = m._store.vectors._client  # type: ignore[attr-defined]
        real = client.upsert

        def down(*_: object, **__: object) -> None:
            raise ConnectionError("qdrant is down")

        monkeypatch.setattr(client, "upsert", down)
        m.add("a sailing trip to Crete in May", user_id="u")  # committed in SQLite; Qdrant's write failed
        assert m._store.vectors.behind()  # type: ignore[attr-defined]
        monkeypatch.setattr(client, "upsert", real)
        hits = m.search("sailing trip to Crete", user_id="u", top_k=1)
        assert hits[0].memory.text == "a sailing trip to Crete in May"
        assert not m._store.vectors.behind()  # type: ignore[attr-defined]


def test_delete_and_delete_all_leave_no_vector_of_it_in_qdrant(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as m:
        kept = m.add("bob likes tea", user_id="bob").items[0]
        gone = m.add("my passport number is X123", user_id="ana").items[0]
        m.add("ana's second secret", user_id="ana")
        vec = np.asarray(m.embedder.embed(["my passport number is X123"])[0], dtype=np.float32)
        m.delete(gone.id, user_id="ana")
        left = m._store.vectors._client.scroll(  # type: ignore[attr-defined]
            m._store.vectors.collection,
            limit=100,
            with_vectors=True,  # type: ignore[attr-defined]
        )[0]
        assert gone.id not in {p.payload["memory_id"] for p in left}
        assert all(not np.allclose(np.asarray(p.vector), vec / np.linalg.norm(vec), atol=1e-5) for p in left)
        assert m.delete_all(user_id="ana") == 1
    assert points(db, "ana") == []
    assert [p.payload["memory_id"] for p in points(db)] == [kept.id]
    assert all("text" not in p.payload for p in points(db))  # the text never leaves SQLite
    # Nor is a deleted point's payload left in the local mode's files (its SQLite storage deletes securely here).
    files = [f for f in (Path(str(db) + ".qdrant")).rglob("*") if f.is_file()]
    assert files and not any(gone.id.encode() in f.read_bytes() for f in files)


def test_a_lost_collection_is_rebuilt_from_the_database_on_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as m:
        m.add("a sailing trip to Crete in May", user_id="u")
        m.add("the first note about gardening", user_id="u")
    client = QdrantClient(path=str(db) + ".qdrant")
    (name,) = [c.name for c in client.get_collections().collections]
    client.delete_collection(name)
    client.close()
    with open_memory(db, tmp_path) as m:
        q = m.embedder.embed(["a sailing trip to Crete in May"])[0]
        (best, score), _ = m._store.vector_search("u", q, 2, Filters())
        assert m.get(best, user_id="u").text == "a sailing trip to Crete in May" and score > 0.99
    assert len(points(db, "u")) == 2


def test_the_local_mode_folder_is_one_process_at_a_time(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(url(db))
    again = open_store(url(db))  # the same process shares the folder's client
    code = f"from memlane.store import open_store\nopen_store({url(db)!r})"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    again.close()
    store.close()
    assert other.returncode != 0 and "StoreError: cannot open the Qdrant folder" in other.stderr


def test_a_read_only_open_searches_qdrant_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_memory(db, tmp_path) as m:
        m.add("a sailing trip to Crete in May", user_id="u")
        q = m.embedder.embed(["a sailing trip to Crete in May"])[0]
    before = db.read_bytes()
    store = open_store(f"sqlite:///{db}?vectors=qdrant+local&mode=ro")
    assert store.read_only
    (hit,) = store.vector_search("u", q, 5, Filters())
    assert hit[1] > 0.99
    store.close()
    assert db.read_bytes() == before


def _item(i: int, rng: random.Random) -> MemoryItem:
    return MemoryItem(
        id=f"m{i:03d}",
        user_id=rng.choice(["u", "u", "v"]),
        agent_id=rng.choice([None, "a1", "a2"]),
        session_id=rng.choice([None, "s1", "s2", "s3"]),
        kind=rng.choice([MemoryKind.MESSAGE, MemoryKind.FACT, MemoryKind.PREFERENCE]),
        role=rng.choice(["user", "assistant"]),
        speaker=rng.choice([None, "Maya", "Tom"]),
        text=f"memory number {i}",
        timestamp=T0 + timedelta(days=i),
        created_at=T0,
        updated_at=T0,
        content_hash=f"h{i}",
        metadata=rng.choice([{}, {"topic": "travel"}, {"topic": "food", "n": 2}, {"odd key": True}]),
        valid_from=rng.choice([None, T0 + timedelta(days=10)]),
    )


FILTERS = [
    Filters(),
    Filters(session_id="s1"),
    Filters(session_id=["s1", "s3"], kind=MemoryKind.FACT),
    Filters(agent_id="a2", role="user"),
    Filters(speaker=["Maya"], since=T0 + timedelta(days=20), until=T0 + timedelta(days=60)),
    Filters(metadata={"topic": "travel"}),
    Filters(metadata={"n": 2}),
    Filters(metadata={"odd key": True}),
    Filters(metadata={"topic": None}),
    Filters(include_superseded=True),
    Filters(as_of=T0 + timedelta(days=15)),
    Filters(as_of=T0 + timedelta(days=5), kind=[MemoryKind.MESSAGE, MemoryKind.FACT]),
    Filters(session_id=[]),
]


def test_filters_select_inside_qdrant_what_sqlite_selects(tmp_path: Path) -> None:
    rng = random.Random(7)
    items = [_item(i, rng) for i in range(120)]
    vecs = np.random.default_rng(3).normal(size=(len(items), 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    stores = [SQLiteStore(tmp_path / "plain.db"), open_store(f"sqlite:///{tmp_path / 'q.db'}?vectors=qdrant+memory")]
    for store in stores:
        store.set_embedder_identity("test", 16)
        store.insert(items, [it.text for it in items], vecs)
        # Supersede some afterwards: only the row's fields change, and Qdrant's payload must follow.
        late = [
            it.model_copy(update={"valid_until": T0 + timedelta(days=12), "superseded_by": "m000"}) for it in items[::5]
        ]
        at = T0 + timedelta(days=12)
        store.write(
            [],
            [],
            np.empty((0, 16), np.float32),
            updates=[(it, HistoryEntry(memory_id=it.id, event=HistoryEvent.SUPERSEDE, at=at)) for it in late],
        )
    q = np.random.default_rng(4).normal(size=16).astype(np.float32)
    q /= np.linalg.norm(q)
    sizes = []
    for filters in FILTERS:
        for user in ("u", "v"):
            want, got = (s.vector_search(user, q, 500, filters) for s in stores)
            assert [i for i, _ in got] == [i for i, _ in want], filters
            sizes.append(len(want))
            assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
    assert sizes[-2:] == [0, 0] and all(sizes[:-2]), sizes  # each filter but the empty list selects something
    assert sizes[0] < sizes[FILTERS.index(Filters(include_superseded=True)) * 2]  # the late supersessions count
    ids = [it.id for it in items if it.user_id == "u"][:10]
    want_scores, got_scores = (s.vector_scores("u", q, ids) for s in stores)
    assert want_scores.keys() == got_scores.keys() and all(
        abs(want_scores[k] - got_scores[k]) < 1e-5 for k in want_scores
    )
    for store in stores:
        store.close()


@pytest.mark.parametrize(
    ("text", "kind", "where"),
    [
        ("qdrant://localhost:6333", "remote", "http://localhost:6333"),
        ("qdrant://db.internal", "remote", "http://db.internal:6333"),
        ("qdrants://KEY@cloud.example:443", "remote", "https://cloud.example:443"),
        ("qdrant+local:///var/lib/memlane/q", "local", "/var/lib/memlane/q"),
        ("qdrant+memory", "memory", None),
    ],
)
def test_vectors_url_forms(text: str, kind: str, where: str | None) -> None:
    target = parse_target(text, "/data/m.db")
    assert target.kind == kind
    assert (target.url or target.path) == where
    if text.startswith("qdrants://KEY"):
        assert target.api_key == "KEY" and "KEY" not in target.name and "KEY" not in repr(target)


def test_qdrant_local_without_a_folder_sits_beside_the_database() -> None:
    assert parse_target("qdrant+local", "/data/m.db").path == "/data/m.db.qdrant"


@pytest.mark.parametrize(
    "text",
    [
        "sqlite:///x.db?vectors=redis://h",
        "sqlite:///x.db?vectors=qdrant://",
        "sqlite:///x.db?vectors=qdrant://h:notaport",
        "sqlite:///x.db?collection=c",
        "sqlite:///x.db?vectors=qdrant+memory&nope=1",
    ],
)
def test_bad_vectors_urls_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        open_store(text)


def test_a_real_qdrant_server() -> None:
    server = os.environ.get("MEMLANE_QDRANT_URL")
    if not server:
        pytest.skip(
            "NO REAL QDRANT SERVER RAN: none can be installed from PyPI, npm or Debian on a fresh machine (the "
            "qdrant server ships as a container or a GitHub release binary only); set MEMLANE_QDRANT_URL="
            "qdrant://HOST:6333 to run this test against one"
        )
    store = open_store(f"sqlite://?vectors={server}&collection=memlane_test_{os.getpid()}")
    try:
        store.set_embedder_identity("test", 4)
        item = MemoryItem(
            id="a", user_id="u", text="hello", timestamp=T0, created_at=T0, updated_at=T0, content_hash="h"
        )
        store.insert([item], ["hello"], np.asarray([[1.0, 0.0, 0.0, 0.0]], np.float32))
        assert store.vector_search("u", np.asarray([1.0, 0, 0, 0], np.float32), 5, Filters())[0][0] == "a"
        assert store.delete_user("u") == 1
        assert store.vector_search("u", np.asarray([1.0, 0, 0, 0], np.float32), 5, Filters()) == []
    finally:
        assert isinstance(store, SQLiteQdrantStore)
        name = store.vectors.collection
        client = store.vectors._client
        if name is not None:
            client.delete_collection(name)
        store.close()
