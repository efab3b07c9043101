"""The per-user read model (store/hot, store/sqlite/hot_feed.py): it answers what the tables would, whoever wrote.

Each check compares the model a long-lived store keeps (replaying the change log) with a model built afresh from
the tables, and with the SQL paths the model replaces.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from memlane import Config, Memory, Message
from memlane.embedding.fake import HashEmbedder
from memlane.models import Filters
from memlane.store.hot import HotRow, HotScope
from memlane.store.sqlite.hot_feed import HotScopes

VOCAB = [f"w{i}" for i in range(25)] + ["tomato", "garden", "sailing", "lighthouse", "Jonas", "café"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, k=rng.randint(1, 9)))


def _fresh(memory: Memory, user: str) -> HotScope:
    store = memory._store
    return HotScopes(store._db).get(user)  # type: ignore[attr-defined]


def _snapshot(model: HotScope) -> dict[str, HotRow]:
    return {r.id: r for r in model.rows if r is not None}


def _answers(model: HotScope, ids: list[str]) -> list[object]:
    out: list[object] = []
    for terms in (["w1", "w2"], ["tomato"], ["sailing", "lighthouse", "w7"], ["jonas"], ["cafe"]):
        for current in (True, False):
            out.append(model.text_search(terms, 1000, current_only=current))
        out.append(model.text_scores(terms, ids))
    out.append(model.neighbours(ids, 2))
    out.append(sorted(model.current(ids)))
    out.append(sorted(model.superseded_pks()))
    out.append(model.facts(ids, ["jonas", "maya"]))
    out.append((model.known_entities(["jonas", "maya", "nobody"]), model.speakers(["jonas", "maya", "nobody"])))
    return out


def _rounded(value: object) -> object:
    """Scores to 9 significant digits (a replayed model sums in another order than a fresh one)."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _assert_current(memory: Memory, user: str) -> None:
    store = memory._store
    with store._hot.using(user) as held:  # type: ignore[attr-defined]
        assert held is not None
        ids = sorted(_snapshot(held))
        fresh = _fresh(memory, user)
        assert _snapshot(held) == _snapshot(fresh)
        assert _rounded(_answers(held, ids)) == _rounded(_answers(fresh, ids))


@pytest.mark.parametrize("seed", range(3))
def test_model_follows_writes_of_this_and_another_connection(tmp_path: Path, config: Config, seed: int) -> None:
    """Interleaved adds, updates, deletes and supersessions, half of them by a second connection (as another process
    would write): after each step the first store's model equals one built from the tables.
    """
    rng = random.Random(seed)
    path = tmp_path / "hot.db"
    with (
        Memory(path, embedder=HashEmbedder(), config=config) as a,
        Memory(path, embedder=HashEmbedder(), config=config) as b,
    ):
        a.add([_text(rng) for _ in range(30)], user_id="u", session_id="s0")
        a.search("w1 tomato", user_id="u")  # opens the model
        for step in range(40):
            writer = a if rng.random() < 0.5 else b
            ids = [it.id for it in writer.list(user_id="u", limit=1000)]
            action = rng.choice(["add", "add", "turns", "update", "delete", "supersede", "other_user"])
            if action == "add" or not ids:
                writer.add(_text(rng), user_id="u", session_id=rng.choice(["s0", "s1", "s2"]))
            elif action == "turns":
                speaker = rng.choice(["Jonas", "Maya"])
                writer.add(
                    [Message(role="user", content=_text(rng), name=speaker) for _ in range(3)],
                    user_id="u",
                    session_id=rng.choice(["s0", "s1"]),
                )
            elif action == "update":
                writer.update(rng.choice(ids), user_id="u", text=_text(rng))
            elif action == "delete":
                writer.delete(rng.choice(ids), user_id="u")
            elif action == "supersede":
                sqlite3.connect(path).execute(
                    "UPDATE memories SET valid_until = 1 WHERE id = ?", (rng.choice(ids),)
                ).connection.commit()
            else:
                writer.add(_text(rng), user_id="v", session_id="s0")  # another user: nothing of u's changes
            _assert_current(a, "u")
            if step % 10 == 9:
                _assert_current(b, "u")


def test_a_delete_all_by_another_connection_leaves_no_ghost(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "hot.db"
    with (
        Memory(path, embedder=HashEmbedder(), config=config) as a,
        Memory(path, embedder=HashEmbedder(), config=config) as b,
    ):
        a.add(["tomato garden", "sailing near the lighthouse"], user_id="u", session_id="s")
        assert a.search("tomato", user_id="u", preset_name="bm25")
        b.delete_all(user_id="u")
        assert a._store.text_search("u", ["tomato"], 10, Filters()) == []
        assert a.search("tomato", user_id="u") == []
        b.add("a tomato salad", user_id="u", session_id="s")
        assert [h.memory.text for h in a.search("tomato", user_id="u", preset_name="bm25")] == ["a tomato salad"]
        _assert_current(a, "u")


def test_a_pinned_read_sees_other_commits_as_of_its_start_and_its_own_writes_at_once(
    tmp_path: Path, config: Config
) -> None:
    path = tmp_path / "hot.db"
    with (
        Memory(path, embedder=HashEmbedder(), config=config) as a,
        Memory(path, embedder=HashEmbedder(), config=config) as b,
    ):
        a.add("tomato garden", user_id="u", session_id="s")
        assert len(a._store.text_search("u", ["tomato"], 10, Filters())) == 1
        with a._store.pinned():
            b.add("a tomato salad", user_id="u", session_id="s")  # another connection commits mid-read
            assert len(a._store.text_search("u", ["tomato"], 10, Filters())) == 1
            a.add("tomato soup", user_id="u", session_id="s")  # this connection's own write is seen at once
            assert len(a._store.text_search("u", ["tomato"], 10, Filters())) == 3
        b.add("tomato sauce", user_id="u", session_id="s")
        assert len(a._store.text_search("u", ["tomato"], 10, Filters())) == 4  # the next read looks again
        _assert_current(a, "u")


def test_reads_inside_a_transaction_are_not_cached(tmp_path: Path, config: Config) -> None:
    """Rows written in a transaction that rolls back never reach the model (reads inside it use the tables)."""
    with Memory(tmp_path / "hot.db", embedder=HashEmbedder(), config=config) as m:
        m.add("tomato garden", user_id="u", session_id="s")
        m.search("tomato", user_id="u")
        store = m._store
        inside: list[object] = []

        def write_then_fail() -> None:
            with store._db.atomic() as c:  # type: ignore[attr-defined]
                c.execute("UPDATE memories SET text = 'sailing boat' WHERE user_id = 'u'")
                with store._hot.using("u") as held:  # type: ignore[attr-defined]
                    inside.append(held)
                raise RuntimeError("roll back")

        with pytest.raises(RuntimeError):
            write_then_fail()
        assert inside == [None]
        assert [h.memory.text for h in m.search("tomato", user_id="u", preset_name="bm25")] == ["tomato garden"]
        _assert_current(m, "u")


def test_a_model_behind_a_pruned_log_is_rebuilt(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.store.sqlite.hot_feed as hot_feed

    monkeypatch.setattr(hot_feed, "PRUNE_AFTER", 5)
    path = tmp_path / "hot.db"
    with (
        Memory(path, embedder=HashEmbedder(), config=config) as a,
        Memory(path, embedder=HashEmbedder(), config=config) as b,
    ):
        a.add(["tomato one"], user_id="u", session_id="s")
        a.search("tomato", user_id="u")
        b.search("tomato", user_id="u")
        for i in range(12):
            a.add(f"tomato number w{i}", user_id="u", session_id="s")
            a.search("tomato", user_id="u")  # a replays and prunes the log past what b holds
        floor = sqlite3.connect(path).execute("SELECT seq FROM fact_log_floor WHERE user_id = 'u'").fetchone()
        assert floor is not None and floor[0] > 0
        assert len(b.search("tomato", user_id="u", preset_name="bm25", top_k=50)) == 13
        _assert_current(b, "u")


def test_entity_links_changed_later_reach_the_model(tmp_path: Path, config: Config) -> None:
    with Memory(tmp_path / "hot.db", embedder=HashEmbedder(), config=config) as m:
        m.add("I went sailing with Anna", user_id="u", session_id="s")
        m.search("sailing", user_id="u")
        store = m._store
        conn = store._db.conn  # type: ignore[attr-defined]
        pk = conn.execute("SELECT pk FROM memories WHERE user_id = 'u'").fetchone()[0]
        conn.execute("INSERT INTO memory_entities (pk, user_id, entity, said_by) VALUES (?, 'u', 'lena', 0)", (pk,))
        mid = conn.execute("SELECT id FROM memories WHERE pk = ?", (pk,)).fetchone()[0]
        facts = store.candidate_facts("u", [mid], ["lena"])
        assert facts[mid].entities == {"lena": False}
        _assert_current(m, "u")


@pytest.mark.parametrize("seed", range(3))
def test_bulk_and_one_by_one_building_agree(seed: int) -> None:
    """A model built from one large batch (grouped postings) answers exactly as one fed row by row, including
    turns whose body carries the speaker's name or a caption, replaced rows and removals.
    """
    rng = random.Random(seed)
    rows: list[HotRow] = []
    for pk in range(1, 700):
        text = _text(rng)
        kind = rng.choice(["message", "message", "message", "fact"])
        speaker = rng.choice(["Jonas", "Maya", ""])
        body = rng.choice([text, f"{speaker}: {text}", f"{text} [photo: {_text(rng)}]"])
        rows.append(
            HotRow(
                pk=pk,
                id=f"m{pk}",
                kind=kind,
                session_id=rng.choice(["s0", "s1"]),
                position=pk if kind == "message" else None,
                ts=pk * 1_000_000,
                importance=rng.random(),
                event_time=None,
                event_end=None,
                category=None,
                intent=None,
                current=rng.random() > 0.1,
                body=body,
                text=text,
                entities={"jonas": True} if speaker == "Jonas" else {},
                label=("user", speaker.casefold()),  # the same speaker twice in a row: no context between them
            )
        )
    bulk, single = HotScope(), HotScope()
    bulk.apply(rows)
    for row in rows:
        single.apply([row])
    ids = sorted(_snapshot(single))
    assert _snapshot(bulk) == _snapshot(single)
    assert _rounded(_answers(bulk, ids)) == _rounded(_answers(single, ids))
    # A second large batch replaces held rows (new words, now current), after removals.
    changed = [replace(r, body=r.body + " tomato", text=r.text + " tomato", current=True) for r in rng.sample(rows, 40)]
    batch = changed + rng.sample(rows, 300)
    gone = [r.pk for r in rng.sample(rows, 30)]
    bulk.apply(batch, removed=gone)
    single.apply([], removed=gone)
    for row in batch:
        single.apply([row])
    ids = sorted(_snapshot(single))
    assert _snapshot(bulk) == _snapshot(single)
    assert _rounded(_answers(bulk, ids)) == _rounded(_answers(single, ids))


def test_least_recently_searched_models_close_past_the_row_budget(tmp_path: Path, config: Config) -> None:
    with Memory(tmp_path / "hot.db", embedder=HashEmbedder(), config=config) as m:
        for user in ("a", "b", "c"):
            m.add([f"tomato {user} w{i}" for i in range(10)], user_id=user, session_id="s")
        hot = m._store._hot  # type: ignore[attr-defined]
        hot._max_rows = 25
        for user in ("a", "b", "c"):
            assert len(m.search("tomato", user_id=user, preset_name="bm25", top_k=20)) == 10
        assert list(hot._open) == ["b", "c"]  # a was searched first: closed to keep 20 of 25
        assert len(m.search("tomato", user_id="a", preset_name="bm25", top_k=20)) == 10  # rebuilt
        assert list(hot._open) == ["c", "a"]
        _assert_current(m, "a")
