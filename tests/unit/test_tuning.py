"""Learning fusion weights: the coordinate ascent, the grouped split, feedback and saved presets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memlane import Config, ConfigError, Memory, NotFoundError, ValidationError
from memlane.embedding.fake import HashEmbedder
from memlane.retrieval.tuning import LabelledQuery, QueryMatrix, coordinate_ascent, fit, mean_recall, split_groups


def matrix(rows: list[tuple[float, float]], relevant: list[bool]) -> QueryMatrix:
    return QueryMatrix(("a", "b"), np.array(rows, dtype=float), np.array(relevant), sum(relevant))


def test_coordinate_ascent_finds_the_dimension_that_ranks_relevant_items_first() -> None:
    # Dimension "b" puts the relevant row first in every query; "a" puts a distractor first.
    queries = [matrix([(1.0, 0.1), (0.2, 0.9)], [False, True]) for _ in range(5)]
    weights, rounds, trace = coordinate_ascent(queries, {"a": 1.0, "b": 0.1}, k=1)
    assert mean_recall(queries, np.array([1.0, 0.1]), 1) == 0.0
    assert mean_recall(queries, np.array([weights["a"], weights["b"]]), 1) == 1.0
    assert rounds >= 1 and trace


def test_coordinate_ascent_keeps_weights_that_are_already_best() -> None:
    queries = [matrix([(0.9, 0.0), (0.1, 0.0)], [True, False])]
    weights, _, trace = coordinate_ascent(queries, {"a": 0.5, "b": 0.0}, k=1)
    assert weights == {"a": 0.5, "b": 0.0} and trace == []


def test_split_keeps_groups_whole_and_is_stable() -> None:
    qs = [LabelledQuery(f"q{i}", "u", frozenset({"m"}), group=f"conv-{i % 4}") for i in range(20)]
    train, test = split_groups(qs, 0.25)
    assert sorted(train + test) == list(range(20)) and test
    assert {qs[i].group for i in train}.isdisjoint({qs[i].group for i in test})
    assert split_groups(qs, 0.25) == (train, test)


def test_fit_reports_before_and_after_on_both_sides() -> None:
    good = [matrix([(1.0, 0.1), (0.2, 0.9)], [False, True]) for _ in range(4)]
    result = fit(good, {"a": 1.0, "b": 0.1}, train=[0, 1], test=[2, 3], k=1)
    assert (result.train_before, result.test_before) == (0.0, 0.0)
    assert (result.train_after, result.test_after) == (1.0, 1.0)
    assert result.test_gain == 1.0


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    config = Config(data_dir=tmp_path / "home", embedder="hash")
    return Memory(tmp_path / "s.db", embedder=HashEmbedder(), config=config)


def seed(mem: Memory) -> None:
    turns = ["I repaired the garden fence", "We had pasta for dinner", "The fence needed new posts", "Nice weather"]
    for user in ("u1", "u2"):
        mem.add([{"name": "Ana", "content": t} for t in turns], user_id=user, session_id="s")


def test_feedback_is_recorded_and_tune_saves_a_usable_preset(mem: Memory) -> None:
    seed(mem)
    for user in ("u1", "u2"):
        for query in ("what about the fence", "what did we eat"):
            hits = mem.search(query, user_id=user, top_k=4, preset_name="multi")
            assert hits[0].query == query
            for hit in hits:
                mem.feedback(hit, useful=("fence" in query) == ("fence" in hit.memory.text))
    result = mem.tune(name="mine", base="multi")
    assert result.train_queries + result.test_queries == 4  # two queries for each of two users
    saved = json.loads(mem.config.presets_file.read_text(encoding="utf-8"))
    assert saved["mine"]["base"] == "multi" and set(saved["mine"]["weights"]) >= {"dense", "lexical"}
    assert mem.search("fence", user_id="u1", top_k=2, preset_name="mine")


def test_feedback_checks_its_input(mem: Memory) -> None:
    seed(mem)
    [hit] = mem.search("fence", user_id="u1", top_k=1)
    with pytest.raises(NotFoundError):
        mem.feedback("no-such-id", useful=True, query="q", user_id="u1")
    with pytest.raises(NotFoundError):  # another user's memory
        mem.feedback(hit.memory.id, useful=True, query="q", user_id="u2")
    with pytest.raises(ValidationError, match="query"):
        mem.feedback(hit.memory.id, useful=True, user_id="u1")
    with pytest.raises(ValidationError, match="no labelled queries"):
        mem.tune(name="x")
    mem.feedback(hit, useful=True)
    with pytest.raises(ConfigError, match="built-in"):
        mem.tune(name="multi")


def test_deleting_a_memory_deletes_its_feedback(mem: Memory) -> None:
    seed(mem)
    [hit] = mem.search("fence", user_id="u1", top_k=1)
    mem.feedback(hit, useful=True)
    mem.delete(hit.memory.id, user_id="u1")
    with pytest.raises(ValidationError, match="no labelled queries"):
        mem.tune(name="x")


def test_unknown_preset_names_the_learned_ones(mem: Memory) -> None:
    seed(mem)
    with pytest.raises(ConfigError, match="unknown retrieval preset 'nope'"):
        mem.search("fence", user_id="u1", preset_name="nope")
