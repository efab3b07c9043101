"""The default importance heuristics: bounded, ordered as documented, replaceable."""

from __future__ import annotations

import pytest

from memlane.enrich.entities import extract_entities
from memlane.enrich.importance import ImportanceScorer, importance

DURABLE = "My sister Anna moved to Berlin in 2022 and works at Siemens as an engineer."


def score(text: str, role: str | None = "user", kind: str = "message", is_question: bool | None = None) -> float:
    return importance(text, role=role, kind=kind, is_question=is_question)


def test_bounded() -> None:
    for text in ["", "ok", DURABLE, "x " * 5000, "?" * 10]:
        for kind in ["message", "fact", "unknown-kind"]:
            assert 0.0 <= score(text, kind=kind) <= 1.0
    assert score("") == 0.0


def test_durable_first_person_fact_beats_small_talk() -> None:
    assert score(DURABLE) > score("Haha, nice!") + 0.3
    assert score("I work as a nurse.") > score("The weather is nice.")


def test_questions_score_lower() -> None:
    statement = "You went to Berlin last year."
    assert score("Did you go to Berlin last year?") < score(statement)
    assert score(statement, is_question=True) < score(statement, is_question=False)


def test_assistant_turns_score_lower() -> None:
    assert score(DURABLE, role="assistant") < score(DURABLE, role="user")
    assert score(DURABLE, role=None) == score(DURABLE, role="user")


def test_typed_memories_score_higher_than_raw_messages() -> None:
    text = "Maya likes hiking."
    assert score(text, kind="preference") > score(text, kind="message")
    assert score(text, kind="fact") > score(text, kind="message")


def test_entities_numbers_and_length_raise_it() -> None:
    assert score("I met Anna and Tom in Paris.") > score("I met some people there today.")
    assert score("I ran 10 km.") > score("I ran.")


def test_precomputed_mentions_give_the_same_score() -> None:
    mentions = extract_entities(DURABLE)
    assert importance(DURABLE, role="user", kind="message", mentions=mentions) == score(DURABLE)


@pytest.mark.parametrize(
    "text", ["我昨天去了北京。", "ذهبت إلى القاهرة أمس", "🎉🎂😀", "Ich habe gestern Anna getroffen."]
)
def test_non_english_and_emoji_do_not_crash(text: str) -> None:
    assert 0.0 <= score(text) <= 1.0


def test_default_fits_the_seam() -> None:
    scorer: ImportanceScorer = importance
    assert isinstance(importance, ImportanceScorer)
    assert scorer(DURABLE, role="user", kind="fact") <= 1.0
