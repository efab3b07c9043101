"""Background builds of a large scope's read model (store/hot/cache.py ``HotScopes``, SQLite feed).

A scope with at least ``BACKGROUND_ROWS`` memories gets its model built on a thread of its own, read through a
second connection; until it is installed the store answers from its tables. The threshold is lowered here so
that a scope of a few hundred memories takes that path.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import memlane.store.hot.cache as hot_cache
from memlane import Config, Memory, Message
from memlane.store.hot import HotScope
from memlane.store.sqlite.hot_feed import HotScopes

WORDS = ["tomato", "garden", "sailing", "lighthouse", "harbour", "violin", "recipe", "marathon", "Jonas", "Anna"]
QUERIES = ["sailing to the lighthouse", "tomato garden", "Jonas and the violin", "marathon recipe", "harbour"]


def _fill(memory: Memory, user: str, n: int, start: int = 0) -> None:
    for lo in range(start, start + n, 100):
        memory.add(
            [
                Message(
                    role="user",
                    content=f"{WORDS[k % 10]} {WORDS[(k * 7) % 10]} {WORDS[(k * 3) % 10]} turn {k}",
                    name="Maya" if k % 2 else "Jonas",
                )
                for k in range(lo, min(lo + 100, start + n))
            ],
            user_id=user,
            session_id=f"s{lo // 50}",
        )


def _ranked(memory: Memory, user: str) -> list[list[tuple[str, float]]]:
    return [[(h.memory.id, h.score) for h in memory.search(q, user_id=user, top_k=10)] for q in QUERIES]


def _same(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    """The same memories in the same order; scores equal to 1e-4. The tables score BM25 with FTS5's statistics of
    the whole file (every user's memories), the model with the user's own, so another user's memories move the
    fifth digit.
    """
    assert [[k for k, _ in hits] for hits in got] == [[k for k, _ in hits] for hits in want]
    for hits, wanted in zip(got, want, strict=True):
        assert [s for _, s in hits] == pytest.approx([s for _, s in wanted], abs=1e-4)


def _rows(model: HotScope) -> dict[str, object]:
    return {r.id: r for r in model.rows if r is not None}


@contextlib.contextmanager
def _stopped_after_snapshot(tmp_path: Path, config: Config) -> Iterator[tuple[Memory, HotScopes, threading.Event]]:
    """A reopened store of 400 memories whose first search has started the build, stopped once the build has read
    its snapshot until the event yielded is set.
    """
    path = tmp_path / "big.db"
    with Memory(path, embedder="hash", config=config) as memory:
        _fill(memory, "maya", 400)
    with Memory(path, embedder="hash", config=config) as memory:
        hot = memory._store._hot  # type: ignore[attr-defined]
        read = threading.Event()
        go_on = threading.Event()
        real = hot._feed.snapshot_apart

        def slow_snapshot(user_id: str, pause: object) -> object:
            found = real(user_id, pause)
            read.set()
            go_on.wait(30)
            return found

        hot._feed.snapshot_apart = slow_snapshot
        memory.search("sailing", user_id="maya")
        assert read.wait(30)
        yield memory, hot, go_on


def _held_at_start(hot: object) -> threading.Event:
    """Hold ``hot``'s background builds at their start until the event returned is set."""
    gate = threading.Event()
    real = hot._build_apart  # type: ignore[attr-defined]

    def held_build(user_id: str, epoch: int) -> None:
        gate.wait(30)
        real(user_id, epoch)

    hot._build_apart = held_build  # type: ignore[attr-defined]
    return gate


@pytest.fixture
def background(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hot_cache, "BACKGROUND_ROWS", 300)
    monkeypatch.setattr(hot_cache, "STEP_ROWS", 16)


def test_large_scope_answers_from_tables_until_its_model_is_built(
    tmp_path: Path, config: Config, background: None
) -> None:
    """The first search starts the build and returns what the tables say; after ``wait_for_index`` the model is
    installed and every search returns the same ranking and scores as before it.
    """
    path = tmp_path / "big.db"
    with Memory(path, embedder="hash", config=config) as memory:
        _fill(memory, "maya", 400)
        _fill(memory, "tom", 50)
    with Memory(path, embedder="hash", config=config) as memory:
        hot = memory._store._hot  # type: ignore[attr-defined]
        gate = _held_at_start(hot)
        cold = _ranked(memory, "maya")
        assert "maya" in hot._building and "maya" not in hot._open
        with hot.using("maya") as model:
            assert model is None  # still building: the tables answer
        with hot.using("tom") as small:
            assert small is not None  # below the threshold: built at once, as before
        gate.set()
        assert memory.wait_for_index(30)
        assert "maya" in hot._open and not hot._building
        _same(_ranked(memory, "maya"), cold)
        with hot.using("maya") as model:
            assert model is not None
            assert _rows(model) == _rows(HotScopes(memory._store._db)._build("maya"))  # type: ignore[attr-defined]


def test_writes_during_a_build_are_in_the_installed_model(tmp_path: Path, config: Config, background: None) -> None:
    """Adds and a delete made after the build read its snapshot are replayed from the log once it is installed."""
    with _stopped_after_snapshot(tmp_path, config) as (memory, hot, go_on):
        _fill(memory, "maya", 30, start=1000)
        gone = memory.list(user_id="maya", limit=1)[0]
        memory.delete(gone.id, user_id="maya")
        go_on.set()
        assert memory.wait_for_index(30)
        with hot.using("maya") as model:
            assert model is not None
            fresh = HotScopes(memory._store._db)._build("maya")  # type: ignore[attr-defined]
            assert _rows(model) == _rows(fresh)
            assert gone.id not in _rows(model) and len(model) == 429


def test_a_build_outdated_by_an_erasure_is_not_installed(tmp_path: Path, config: Config, background: None) -> None:
    """``delete_all`` of the user while the build runs: the model it built is dropped, and nothing deleted is
    ever answered from it.
    """
    with _stopped_after_snapshot(tmp_path, config) as (memory, hot, go_on):
        memory.delete_all(user_id="maya")
        go_on.set()
        assert memory.wait_for_index(30)
        assert "maya" not in hot._open
        assert memory.search("sailing lighthouse", user_id="maya") == []
        with hot.using("maya") as model:
            assert model is not None and len(model) == 0  # small now: built at once, from the tables


def test_a_failed_build_falls_back_to_building_at_once(
    tmp_path: Path, config: Config, background: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "big.db"
    with Memory(path, embedder="hash", config=config) as memory:
        _fill(memory, "maya", 400)
    with Memory(path, embedder="hash", config=config) as memory:
        hot = memory._store._hot  # type: ignore[attr-defined]

        def broken(user_id: str, pause: object) -> object:
            raise MemoryError("no room for the model")

        hot._feed.snapshot_apart = broken
        cold = _ranked(memory, "maya")
        assert memory.wait_for_index(30)
        assert "building the read model of 'maya' failed" in caplog.text
        _same(_ranked(memory, "maya"), cold)
        assert "maya" in hot._open  # the search after the failure built it at once


def test_a_build_waits_for_running_searches(
    tmp_path: Path, config: Config, background: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between steps the build waits while a search runs (up to ``PAUSE`` each time), so a search is not slowed
    by a build holding the interpreter lock; once no search runs, it goes on to the end.
    """
    path = tmp_path / "big.db"
    with Memory(path, embedder="hash", config=config) as memory:
        _fill(memory, "maya", 400)
    with Memory(path, embedder="hash", config=config) as memory:
        hot = memory._store._hot  # type: ignore[attr-defined]
        monkeypatch.setattr(hot_cache, "PAUSE", 60.0)  # the build waits for the search, not for the time limit
        steps: list[float] = []
        events: list[str] = []
        real, real_yield = HotScope.apply, hot._yield

        def counted(self: HotScope, rows: object, removed: object = ()) -> None:
            steps.append(time.monotonic())
            events.append("step")
            real(self, rows, removed)  # type: ignore[arg-type]

        def looked() -> None:
            events.append("look")
            real_yield()

        monkeypatch.setattr(HotScope, "apply", counted)
        monkeypatch.setattr(hot, "_yield", looked)
        with hot.serving():
            memory.search("sailing", user_id="maya")  # starts the build
            time.sleep(0.5)
            assert not steps  # held at its first look: a search is running
            assert "maya" in hot._building
            released = time.monotonic()
        assert memory.wait_for_index(30)
        assert len(steps) == 400 // 16 and steps[0] >= released
        assert ("step", "step") not in list(itertools.pairwise(events))  # a look between any two steps
        with hot.using("maya") as model:
            assert model is not None and len(model) == 400


def test_a_model_behind_a_pruned_log_is_replaced_by_its_background_rebuild(
    tmp_path: Path, config: Config, background: None
) -> None:
    """A large scope's model that can no longer replay (the log was pruned past its mark) is rebuilt in the
    background, and the rebuilt model is installed in its place: the outdated one is not kept meanwhile.
    """
    path = tmp_path / "big.db"
    with Memory(path, embedder="hash", config=config) as memory:
        _fill(memory, "maya", 400)
    with Memory(path, embedder="hash", config=config) as memory:
        hot = memory._store._hot  # type: ignore[attr-defined]
        memory.search("sailing", user_id="maya")
        assert memory.wait_for_index(30)
        with hot.using("maya") as old:
            assert old is not None
        _fill(memory, "maya", 20, start=1000)
        real = hot._feed.changes
        hot._feed.changes = lambda user_id, since: None  # as when the log no longer reaches the model's mark
        with hot.using("maya") as model:
            assert model is None  # rebuilding: the tables answer
        hot._feed.changes = real
        assert memory.wait_for_index(30)
        with hot.using("maya") as model:
            assert model is not None and model is not old
            assert _rows(model) == _rows(HotScopes(memory._store._db)._build("maya"))  # type: ignore[attr-defined]
            assert len(model) == 420
        assert not hot._building
