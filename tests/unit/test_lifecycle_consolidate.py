"""Consolidation decisions (rules and LLM with fallback) and validity in time."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memlane.extraction import Candidate, RuleExtractor
from memlane.lifecycle import Action, Consolidator, LLMConsolidator, Related, RuleConsolidator, is_valid_at, supersede
from memlane.lifecycle.consolidate import claim_of, contradicts, is_current
from memlane.llm import OpenAIChat
from memlane.models import MemoryItem, MemoryKind
from tests.llm.replay import completion, recorded, replay_server

T2023 = datetime(2023, 3, 1, tzinfo=UTC)
T2025 = datetime(2025, 5, 8, tzinfo=UTC)


def memory(id: str, text: str, *, at: datetime = T2023, kind: MemoryKind = MemoryKind.FACT, **meta: str) -> MemoryItem:
    return MemoryItem(
        id=id,
        user_id="u",
        kind=kind,
        text=text,
        timestamp=at,
        created_at=at,
        updated_at=at,
        content_hash="h",
        metadata=meta,
        entities=["Caroline"],
    )


BOSTON = memory("boston", "Caroline lives in Boston.", subject="Caroline", attribute="residence", value="Boston")


def candidate(text: str, **kw: object) -> Candidate:
    fields: dict[str, object] = {"kind": MemoryKind.FACT, "text": text, "confidence": 0.9, "entities": ["Caroline"]}
    fields.update(kw)
    return Candidate.model_validate(fields)


def test_rules_are_a_consolidator() -> None:
    assert isinstance(RuleConsolidator(), Consolidator)


def test_same_text_is_a_noop() -> None:
    d = RuleConsolidator().decide(candidate("caroline  lives in BOSTON."), [Related(BOSTON, 0.99)], at=T2025)
    assert (d.action, d.targets) == (Action.NOOP, ["boston"])


def test_a_move_supersedes_the_old_residence() -> None:
    # End to end from the offline extractor's output for the turn that says so.
    turn = MemoryItem(
        id="t",
        user_id="u",
        role="user",
        speaker="Caroline",
        text="I moved from Boston to Denver last year.",
        timestamp=T2025,
        created_at=T2025,
        updated_at=T2025,
        content_hash="h",
    )
    (moved,) = RuleExtractor().extract([turn]).accepted()
    decision = RuleConsolidator().decide(moved, [Related(BOSTON, 0.6)], at=T2025)
    assert (decision.action, decision.targets) == (Action.SUPERSEDE, ["boston"])
    closed = supersede(BOSTON, "denver", moved.event_time or T2025)
    assert closed.superseded_by == "denver" and closed.valid_until == datetime(2024, 1, 1, tzinfo=UTC)
    assert not is_current(closed) and is_current(BOSTON)
    assert is_valid_at(closed, datetime(2023, 6, 1, tzinfo=UTC))  # still answers "where did she live in 2023?"
    assert not is_valid_at(closed, T2025)
    assert not is_valid_at(closed, datetime(2020, 1, 1, tzinfo=UTC))  # before it was said to hold
    assert BOSTON.valid_until is None  # pure


def test_restating_the_same_value_merges() -> None:
    c = candidate("Caroline is based in Boston.", subject="caroline", attribute="Residence", value="boston")
    d = RuleConsolidator().decide(c, [Related(BOSTON, 0.7)], at=T2025)
    assert (d.action, d.targets) == (Action.MERGE, ["boston"])


def test_an_older_claim_arriving_late_is_added_already_closed() -> None:
    old = candidate(
        "Caroline lived in Austin.",
        subject="Caroline",
        attribute="residence",
        value="Austin",
        event_time=datetime(2019, 1, 1, tzinfo=UTC),
    )
    d = RuleConsolidator().decide(old, [Related(BOSTON, 0.5)], at=T2025)
    assert d.action is Action.ADD and d.superseded_by == "boston" and d.valid_until == T2023


def test_near_duplicates_merge_into_the_most_similar() -> None:
    other = memory("other", "Caroline has been living in Boston for years.")
    d = RuleConsolidator().decide(
        candidate("Caroline has lived in Boston for years."), [Related(BOSTON, 0.91), Related(other, 0.97)], at=T2025
    )
    assert (d.action, d.targets) == (Action.MERGE, ["other"])


def test_messages_and_superseded_memories_are_never_targets() -> None:
    msg = memory("msg", "Caroline lives in Boston.", kind=MemoryKind.MESSAGE)
    closed = supersede(BOSTON, "x", T2023)
    d = RuleConsolidator().decide(
        candidate("Caroline lives in Boston."), [Related(msg, 1.0), Related(closed, 1.0)], at=T2025
    )
    assert d.action is Action.ADD


def test_claims_are_compared_case_folded() -> None:
    assert claim_of(BOSTON) == ("caroline", "residence", "boston")


def test_llm_decides_when_its_reply_is_usable() -> None:
    reply = completion(json.dumps({"action": "SUPERSEDE", "targets": ["e1"], "reason": "she moved"}))
    with replay_server(reply) as (url, script), OpenAIChat(url, "m") as chat:
        d = LLMConsolidator(chat).decide(candidate("Caroline now lives in Denver."), [Related(BOSTON, 0.8)], at=T2025)
    assert (d.action, d.targets, d.decided_by) == (Action.SUPERSEDE, ["boston"], "llm")
    prompt = script.requests[0]["body"]["messages"][1]["content"]
    assert "NEW (fact, 2025-05-08): Caroline now lives in Denver." in prompt and "[e1] (fact, 2023-03-01)" in prompt


def test_llm_real_ill_shaped_replies_fall_back_to_the_rules() -> None:
    # SmolLM2-135M's recorded replies: json_schema refused, then "action" as an object (twice, with the re-ask).
    replies = [recorded("consolidate_json_schema"), recorded("consolidate_json_object")]
    c = candidate("Caroline lives in Denver.", subject="Caroline", attribute="residence", value="Denver")
    with replay_server(*replies) as (url, script), OpenAIChat(url, "m") as chat:
        d = LLMConsolidator(chat, reasks=1).decide(c, [Related(BOSTON, 0.8)], at=T2025)
    assert (d.action, d.targets, d.decided_by) == (Action.SUPERSEDE, ["boston"], "rules")
    assert len(script.requests) == 3


@pytest.mark.parametrize(
    "reply", [{"action": "MERGE", "targets": ["e7"]}, {"action": "SUPERSEDE", "targets": []}, {"action": "NOOP"}]
)
def test_llm_decisions_naming_wrong_targets_fall_back(reply: dict[str, object]) -> None:
    with replay_server(completion(json.dumps(reply))) as (url, _), OpenAIChat(url, "m") as chat:
        d = LLMConsolidator(chat).decide(candidate("Caroline likes Denver."), [Related(BOSTON, 0.5)], at=T2025)
    assert d.decided_by == "rules" and d.action is Action.ADD


def test_llm_is_not_called_when_rules_settle_it() -> None:
    with replay_server() as (url, script), OpenAIChat(url, "m") as chat:
        consolidator = LLMConsolidator(chat)
        assert consolidator.decide(candidate("Something new."), [], at=T2025).action is Action.ADD
        assert (
            consolidator.decide(candidate("Caroline lives in Boston."), [Related(BOSTON, 1.0)], at=T2025).action
            is Action.NOOP
        )
    assert script.requests == []


# -- claims that replace others without sharing their attribute ----------------------------------------------------
FAV_COFFEE = memory(
    "fav",
    "Maya's favourite drink is coffee.",
    kind=MemoryKind.PREFERENCE,
    subject="Maya",
    attribute="favourite drink",
    value="coffee",
)
HATES_TEA = memory(
    "hates",
    "Maya doesn't like tea.",
    kind=MemoryKind.PREFERENCE,
    subject="Maya",
    attribute="preference tea",
    value="dislikes",
)


def test_a_negated_preference_closes_the_favourite_it_named() -> None:
    c = candidate(
        "Maya doesn't like coffee anymore.",
        kind=MemoryKind.PREFERENCE,
        subject="Maya",
        attribute="preference coffee",
        value="dislikes",
    )
    d = RuleConsolidator().decide(c, [Related(FAV_COFFEE, 0.5), Related(HATES_TEA, 0.4)], at=T2025)
    assert (d.action, d.targets) == (Action.SUPERSEDE, ["fav"])


def test_a_new_favourite_closes_a_dislike_of_it_and_the_old_favourite() -> None:
    c = candidate(
        "Maya prefers tea now.", kind=MemoryKind.PREFERENCE, subject="Maya", attribute="favourite drink", value="tea"
    )
    d = RuleConsolidator().decide(c, [Related(FAV_COFFEE, 0.5), Related(HATES_TEA, 0.4)], at=T2025)
    assert d.action is Action.SUPERSEDE and sorted(d.targets) == ["fav", "hates"]


def test_contradiction_needs_the_same_subject() -> None:
    assert contradicts(("maya", "preference coffee", "dislikes"), ("maya", "favourite drink", "coffee"))
    assert not contradicts(("tom", "preference coffee", "dislikes"), ("maya", "favourite drink", "coffee"))
    assert not contradicts(("maya", "preference coffee", "likes"), ("maya", "favourite drink", "coffee"))
    assert not contradicts(("maya", "preference coffee", "dislikes"), ("maya", "favourite drink", "tea"))


def test_a_cancelled_plan_closes_a_plan_for_later_in_the_year() -> None:
    # The plan's event lies ahead (December); it was said in March, before the cancellation in May.
    trip = memory(
        "trip",
        "Maya is going to Tokyo in December 2025.",
        kind=MemoryKind.PLAN,
        subject="Maya",
        attribute="plan tokyo",
        value="planned",
    )
    trip = trip.model_copy(update={"event_time": datetime(2025, 12, 1, tzinfo=UTC)})
    c = candidate(
        "Maya is not going to Tokyo anymore.",
        kind=MemoryKind.PLAN,
        subject="Maya",
        attribute="plan tokyo",
        value="cancelled",
    )
    d = RuleConsolidator().decide(c, [Related(trip, 0.7)], at=T2025)
    assert (d.action, d.targets) == (Action.SUPERSEDE, ["trip"])
