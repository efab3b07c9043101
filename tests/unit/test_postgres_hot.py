"""The per-user read model over PostgreSQL (store/postgres/hot_feed.py): it answers what the tables would, whoever
wrote, including writers whose transactions commit out of ``seq`` order, and under row-level security.
"""

from __future__ import annotations

import random
import threading
import uuid

import psycopg
import pytest

import memlane.store.hot.cache as hot_cache
from memlane import Config, Memory, Message
from memlane.embedding.fake import HashEmbedder
from memlane.models import Filters
from memlane.store.hot import HotRow, HotScope
from memlane.store.postgres import PostgresStore, hot_feed
from memlane.store.postgres.hot_feed import HotScopes
from tests.pg_server import postgres_url
from tests.unit.test_hot_build import _held_at_start
from tests.unit.test_hot_scope import VOCAB, _answers, _rounded

CONFIG = Config(embedder="hash", infer=False)


@pytest.fixture(autouse=True)
def always_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read checks the log (no freshness window): what is tested is the replay, not the timing."""
    monkeypatch.setattr(hot_feed, "FRESH_FOR", 0.0)


@pytest.fixture
def url() -> str:
    return postgres_url()


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, k=rng.randint(1, 9)))


def _snapshot(model: HotScope) -> dict[str, HotRow]:
    return {r.id: r for r in model.rows if r is not None}


def _assert_current(memory: Memory, user: str) -> None:
    store = memory._store
    with store._hot.using(user) as held:  # type: ignore[attr-defined]
        assert held is not None
        ids = sorted(_snapshot(held))
        fresh = HotScopes(store._db)._build(user)  # type: ignore[attr-defined]
        assert _snapshot(held) == _snapshot(fresh)
        assert _rounded(_answers(held, ids)) == _rounded(_answers(fresh, ids))


def test_model_follows_writes_of_this_and_another_store(url: str) -> None:
    rng = random.Random(7)
    with (
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as a,
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as b,
    ):
        a.add([_text(rng) for _ in range(20)], user_id="u", session_id="s0")
        a.search("w1 tomato", user_id="u")
        for _ in range(25):
            writer = a if rng.random() < 0.5 else b
            ids = [it.id for it in writer.list(user_id="u", limit=1000)]
            action = rng.choice(["add", "turns", "update", "delete", "supersede", "other_user"])
            if action == "add" or not ids:
                writer.add(_text(rng), user_id="u", session_id=rng.choice(["s0", "s1"]))
            elif action == "turns":
                writer.add(
                    [Message(role="user", content=_text(rng), name=rng.choice(["Jonas", "Maya"])) for _ in range(3)],
                    user_id="u",
                    session_id="s1",
                )
            elif action == "update":
                writer.update(rng.choice(ids), user_id="u", text=_text(rng))
            elif action == "delete":
                writer.delete(rng.choice(ids), user_id="u")
            elif action == "supersede":
                with psycopg.connect(url, autocommit=True) as c:  # another client, outside memlane
                    c.execute("UPDATE memories SET valid_until = 1 WHERE id = %s", (rng.choice(ids),))
            else:
                writer.add(_text(rng), user_id="v", session_id="s0")
            _assert_current(a, "u")
        _assert_current(b, "u")


def test_an_earlier_seq_committed_later_is_not_missed(url: str) -> None:
    """Two writers at once: the first to write (lower seq) commits after the second. A reader that replayed in
    between has seen the later seq; it must still pick up the earlier entry once it commits.

    The first writer supersedes a memory (a change that takes no lock another writer of the user waits on; two adds
    of one user queue on the user's BM25 statistics row, so they commit in seq order anyway).
    """
    with (
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as b,
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as reader,
    ):
        reader.add("tomato early", user_id="u", session_id="s1")
        reader.add("a garden", user_id="u", session_id="s3")
        assert _texts(reader, ["tomato"]) == ["tomato early"]
        with psycopg.connect(url) as a:  # a transaction, open until the block ends
            a.execute("UPDATE memories SET valid_until = 1 WHERE text = 'tomato early'")
            b.add("tomato late", user_id="u", session_id="s2")  # b writes after a, and commits first
            assert _texts(reader, ["tomato"]) == ["tomato early", "tomato late"]
            a.commit()
        with psycopg.connect(url, autocommit=True) as c:
            seqs = dict(
                c.execute(
                    "SELECT m.text, max(f.seq) FROM fact_log f JOIN memories m ON m.pk = f.pk GROUP BY m.text"
                ).fetchall()
            )
        assert seqs["tomato early"] < seqs["tomato late"]  # the out-of-order commit really happened
        assert _texts(reader, ["tomato"]) == ["tomato late"]
        _assert_current(reader, "u")


def _texts(memory: Memory, terms: list[str]) -> list[str]:
    """The texts of the current memories matching ``terms``, in text order."""
    found = memory._store.text_search("u", terms, 10, Filters())
    return sorted(memory.get(i, user_id="u").text for i, _ in found)


def test_concurrent_writers_on_several_connections_leave_the_model_current(url: str) -> None:
    """Threads writing through their own stores while a reader replays all along."""
    with Memory(url, embedder=HashEmbedder(), config=CONFIG) as reader:
        reader.add("start", user_id="u", session_id="s")
        errors: list[BaseException] = []

        def write(seed: int) -> None:
            rng = random.Random(seed)
            try:
                with Memory(url, embedder=HashEmbedder(), config=CONFIG) as w:
                    for _ in range(15):
                        w.add(_text(rng), user_id="u", session_id=f"s{seed}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            reader.search("w1 w2 tomato", user_id="u")
        for t in threads:
            t.join()
        assert errors == []
        with reader._store._hot.using("u") as model:  # type: ignore[attr-defined]
            assert model is not None and len(model) == 46
        _assert_current(reader, "u")


def test_a_delete_all_by_another_store_leaves_no_ghost(url: str) -> None:
    with (
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as a,
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as b,
    ):
        a.add(["tomato garden", "sailing near the lighthouse"], user_id="u", session_id="s")
        assert a.search("tomato", user_id="u", preset_name="bm25")
        b.delete_all(user_id="u")
        assert a._store.text_search("u", ["tomato"], 10, Filters()) == []
        b.add("a tomato salad", user_id="u", session_id="s")
        assert [h.memory.text for h in a.search("tomato", user_id="u", preset_name="bm25")] == ["a tomato salad"]
        _assert_current(a, "u")


def test_a_model_behind_a_pruned_log_is_rebuilt(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hot_feed, "PRUNE_AFTER", 4)
    with (
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as a,
        Memory(url, embedder=HashEmbedder(), config=CONFIG) as b,
    ):
        a.add("tomato one", user_id="u", session_id="s")
        a.search("tomato", user_id="u")
        b.search("tomato", user_id="u")
        for i in range(12):
            a.add(f"tomato number w{i}", user_id="u", session_id="s")
            a.search("tomato", user_id="u")
        with psycopg.connect(url, autocommit=True) as c:
            floor = c.execute("SELECT xid FROM fact_log_floor WHERE user_id = 'u'").fetchone()
        assert floor is not None and floor[0] > 0
        assert len(b.search("tomato", user_id="u", preset_name="bm25", top_k=50)) == 13
        _assert_current(b, "u")


def test_reads_inside_a_transaction_use_the_tables(url: str) -> None:
    with Memory(url, embedder=HashEmbedder(), config=CONFIG) as m:
        m.add("tomato garden", user_id="u", session_id="s")
        m.search("tomato", user_id="u")
        store = m._store
        inside: list[object] = []

        def write_then_fail() -> None:
            with store._db.atomic("u") as c:  # type: ignore[attr-defined]
                c.execute("UPDATE memories SET text = 'sailing boat', body = 'sailing boat' WHERE user_id = 'u'")
                with store._hot.using("u") as held:  # type: ignore[attr-defined]
                    inside.append(held)
                raise RuntimeError("roll back")

        with pytest.raises(RuntimeError):
            write_then_fail()
        assert inside == [None]
        assert [h.memory.text for h in m.search("tomato", user_id="u", preset_name="bm25")] == ["tomato garden"]
        _assert_current(m, "u")


def test_a_search_reads_a_bounded_number_of_queries(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the model is built, a search sends a few queries whatever the store holds (none is per memory); the
    lexical dimension, candidate facts, neighbours and entities send none.
    """
    monkeypatch.setattr(hot_feed, "FRESH_FOR", 60.0)
    with Memory(url, embedder=HashEmbedder(), config=CONFIG) as m:
        rng = random.Random(3)
        counts = []
        for size in (50, 400):
            m.add([_text(rng) for _ in range(size)], user_id=f"u{size}", session_id="s")
            m.search("w1 tomato", user_id=f"u{size}")
            db = m._store._db  # type: ignore[attr-defined]
            before = db.reads
            m.search("w2 garden sailing", user_id=f"u{size}")
            counts.append(db.reads - before)
        assert max(counts) <= 6


def test_the_log_is_confined_by_row_level_security(url: str) -> None:
    base = url
    PostgresStore(base).close()  # the schema, made by the administrator (the test database may not have it yet)
    role = f"memlane_app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f"CREATE ROLE {role} LOGIN")
        c.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        c.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
    sep = "&" if "?" in base else "?"
    try:
        with Memory(f"{base}{sep}user={role}", embedder=HashEmbedder(), config=CONFIG) as memory:
            memory.add(["ana likes tea", "ana plays chess"], user_id="ana")
            memory.add("bob likes tea", user_id="bob")
            hits = memory.search("tea", user_id="ana", preset_name="bm25")
            assert hits and {h.memory.user_id for h in hits} == {"ana"}
            db = memory._store._db
            assert {r[0] for r in db.read("SELECT user_id FROM fact_log", scope="ana")} == {"ana"}
            assert {r[0] for r in db.read("SELECT user_id FROM fact_log")} == {"ana", "bob"}
            with memory._store._hot.using("ana") as model:
                assert model is not None and len(model) == 2
    finally:
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f"DROP OWNED BY {role}")
            c.execute(f"DROP ROLE {role}")


def test_a_large_scope_model_is_built_in_the_background(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``BACKGROUND_ROWS`` the first search reads the tables and starts the build (through a connection of the
    pool); writes made meanwhile are replayed once it is installed.
    """
    monkeypatch.setattr(hot_cache, "BACKGROUND_ROWS", 300)
    rng = random.Random(11)
    user = f"big-{uuid.uuid4().hex[:8]}"
    with Memory(url, embedder=HashEmbedder(), config=CONFIG) as m:
        m.add([_text(rng) for _ in range(400)], user_id=user, session_id="s")
    with Memory(url, embedder=HashEmbedder(), config=CONFIG) as m:
        hot = m._store._hot  # type: ignore[attr-defined]
        gate = _held_at_start(hot)
        cold = [h.memory.id for h in m.search("w1 tomato", user_id=user, top_k=10)]
        with hot.using(user) as model:
            assert model is None
        added = m.add([f"{_text(rng)} late {k}" for k in range(5)], user_id=user, session_id="s")
        gate.set()
        assert m.wait_for_index(30)
        assert user in hot._open
        _assert_current(m, user)
        with hot.using(user) as model:
            assert model is not None
            assert {it.id for it in added.items} <= set(_snapshot(model))
        assert len(cold) == 10
