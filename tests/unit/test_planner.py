"""The planner's pure parts: which dimensions a query engages, and the query the dense dimension embeds."""

from __future__ import annotations

from datetime import UTC, datetime

from memlane.config import preset
from memlane.retrieval.query import analyse_query
from memlane.retrieval.search import Planner, without_names

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def test_speaker_names_are_cut_from_the_semantic_query() -> None:
    f = analyse_query("What did Caroline's sister paint for Melanie?", NOW, known_entities=["caroline", "melanie"])
    assert without_names(f, ["caroline"]) == "What did sister paint for Melanie?"
    assert without_names(f, ["caroline", "melanie"]) == "What did sister paint for ?"
    assert without_names(f, ["nobody"]) == f.text


def test_a_query_that_is_only_a_name_is_kept_whole() -> None:
    f = analyse_query("Caroline?", NOW, known_entities=["caroline"])
    assert without_names(f, ["caroline"]) == "Caroline?"


def test_dimensions_without_evidence_are_switched_off() -> None:
    multi = preset("multi")
    plain = Planner().plan(analyse_query("how was the trip", NOW), multi, entities=[])
    assert plain.fusion.weights["entity"] == 0.0 and plain.fusion.weights["temporal"] == 0.0
    assert plain.fusion.weights["lexical"] == 0.4 and plain.semantic_query == "how was the trip"
    asked = Planner().plan(
        analyse_query("What did Ana do in May 2023 about ERR_42_TIMEOUT?", NOW, known_entities=["ana"]),
        multi,
        entities=["ana"],
        speakers=["ana"],
    )
    assert asked.fusion.weights["entity"] == 0.4 and "'ana' speaks here" in asked.triggers["entity"]
    assert asked.fusion.weights["temporal"] == 0.2 and "2023-05-01 to 2023-06-01" in asked.triggers["temporal"]
    assert asked.fusion.weights["lexical"] == 0.8 and "ERR_42_TIMEOUT" in asked.triggers["lexical"]
    assert "Ana" not in asked.semantic_query and "speaker names" in asked.triggers["dense"]


def test_a_named_non_speaker_keeps_the_entity_weight() -> None:
    # Only a question naming someone who speaks in the scope favours their own turns; a third party is a mention.
    plan = Planner().plan(
        analyse_query("What did Ana say about Lisbon?", NOW, known_entities=["ana", "lisbon"]),
        preset("multi"),
        entities=["ana", "lisbon"],
    )
    assert plan.fusion.weights["entity"] == 0.25 and "speak" not in plan.triggers["entity"]


def test_a_when_question_engages_temporal_weakly() -> None:
    plan = Planner().plan(analyse_query("When did we go camping?", NOW), preset("multi"), entities=[])
    assert plan.fusion.weights["temporal"] == 0.2 and "asks when" in plan.triggers["temporal"]
