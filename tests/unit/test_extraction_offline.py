"""RuleExtractor: typed memories from first-person statements, and its precision/recall on labelled samples."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane.extraction import Candidate, Extractor, RuleExtractor
from memlane.models import MemoryItem, MemoryKind, parse_time

SAMPLES = Path(__file__).parents[1] / "fixtures" / "extraction"
log = logging.getLogger(__name__)
REF = datetime(2025, 7, 2, 12, 0, tzinfo=UTC)  # a Wednesday


def message(
    text: str, *, speaker: str | None = "Maya", role: str = "user", at: datetime = REF, id: str = "m1"
) -> MemoryItem:
    return MemoryItem(
        id=id,
        user_id="u",
        role=role,
        speaker=speaker,
        text=text,
        timestamp=at,
        created_at=at,
        updated_at=at,
        content_hash="h",
    )


def extract(text: str, **kw: object) -> list[Candidate]:
    return RuleExtractor().extract([message(text, **kw)]).accepted()  # type: ignore[arg-type]


def test_is_an_extractor() -> None:
    assert isinstance(RuleExtractor(), Extractor)


def test_preference_is_rewritten_to_stand_alone() -> None:
    (c,) = extract("I love hiking with my dog on weekends!")
    assert c.kind is MemoryKind.PREFERENCE and c.text == "Maya loves hiking with Maya's dog on weekends."
    assert c.subject == "Maya" and c.attribute == "preference hiking with my dog" and c.value == "likes"
    assert c.source_ids == ["m1"] and c.confidence >= 0.6


def test_plan_gets_an_absolute_date_and_event_time() -> None:
    (c,) = extract("I'm going to visit Tokyo next Friday.")
    assert c.kind is MemoryKind.PLAN and c.text == "Maya is going to visit Tokyo on 2025-07-04."
    assert c.event_time == datetime(2025, 7, 4, tzinfo=UTC) and "Tokyo" in c.entities


def test_move_is_a_residence_fact_with_its_time() -> None:
    (c,) = extract("I moved from Boston to Denver last year.")
    assert c.kind is MemoryKind.FACT and c.text == "Maya moved from Boston to Denver in 2024."
    assert (c.attribute, c.value) == ("residence", "Denver") and c.event_time == datetime(2024, 1, 1, tzinfo=UTC)


def test_pets_and_relations() -> None:
    pets = extract("I got a new puppy named Biscuit last week and I have a cat called Mochi.")
    # a named pet is an entity memory, its claim ``pet <name> = <animal>``
    assert [p.text for p in pets] == ["Biscuit is Maya's puppy.", "Mochi is Maya's cat."]
    assert {p.kind for p in pets} == {MemoryKind.ENTITY}
    assert [(p.attribute, p.value) for p in pets] == [("pet biscuit", "puppy"), ("pet mochi", "cat")]
    (rel,) = extract("My husband is called David.")
    assert rel.kind is MemoryKind.RELATION and rel.text == "David is Maya's husband." and rel.attribute == "husband"


def test_unknown_speaker_is_the_user() -> None:
    (c,) = extract("I work as a nurse.", speaker=None)
    assert c.text == "The user works as a nurse." and c.attribute == "occupation"


@pytest.mark.parametrize(
    "text",
    [
        "Do you love hiking too?",
        "If I won the lottery I would buy a boat.",
        "My sister said she loves jazz.",
        'He said, "I love opera," but I doubt it.',
        "Oh great, I just love being stuck in traffic.",
        "Yeah right, I love doing taxes.",
        "Tom loves football.",
        "I like it, thanks.",
        "I'm going to grab a coffee, brb.",
        "I'd love to go skiing one day.",
    ],
)
def test_negatives_give_nothing(text: str) -> None:
    assert extract(text) == []


def test_hedged_statements_lose_confidence() -> None:
    plain = RuleExtractor().extract([message("I live in Lisbon.")]).candidates[0]
    hedged = RuleExtractor().extract([message("I think I live in Lisbon.")]).candidates[0]
    assert hedged.confidence == pytest.approx(plain.confidence - 0.2)


def test_assistant_and_system_turns_are_skipped_unless_a_person_speaks() -> None:
    ex = RuleExtractor()
    assert ex.extract([message("I love helping you!", speaker=None, role="assistant")]).candidates == []
    assert ex.extract([message("I love jazz.", speaker=None, role="system")]).candidates == []
    assert (
        ex.extract([message("I love jazz.", speaker="Jon", role="assistant")]).candidates[0].text == "Jon loves jazz."
    )


# -- measured precision and recall ----------------------------------------------------------------------------
@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    kind_agree: int = 0

    @property
    def precision(self) -> float:
        return self.tp / max(self.tp + self.fp, 1)

    @property
    def recall(self) -> float:
        return self.tp / max(self.tp + self.fn, 1)


def measure(name: str) -> Score:
    """Accepted candidates vs hand labels: a candidate is right when its text holds all of a label's key words."""
    score = Score()
    extractor = RuleExtractor()
    for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        at = parse_time(row["timestamp"])
        accepted = extractor.extract([message(row["text"], speaker=row["speaker"], at=at, id=row["id"])]).accepted()
        expected = list(row["expected"])
        for c in accepted:
            hit = next((e for e in expected if all(k in c.text.lower() for k in e["must"])), None)
            if hit is not None:
                expected.remove(hit)
                score.tp += 1
                score.kind_agree += c.kind.value == hit["kind"]
            else:
                score.fp += 1
                log.info("false positive on %s: %r from %r", row["id"], c.text, row["text"])
        score.fn += len(expected)
    log.info(
        "%s: tp=%d fp=%d fn=%d precision=%.3f recall=%.3f",
        name,
        score.tp,
        score.fp,
        score.fn,
        score.precision,
        score.recall,
    )
    return score


def test_precision_and_recall_on_the_development_sample() -> None:
    # 80 hand-written turns (52 + 3 labelled memories, 27 negatives); the rules were written while looking at it.
    score = measure("offline_sample.jsonl")
    assert score.precision >= 0.95 and score.recall >= 0.9
    assert score.kind_agree == score.tp


def test_precision_and_recall_on_the_held_out_sample() -> None:
    # 40 turns written after the rules and never used to tune them: the honest numbers (precision 16/18, recall 16/28
    # when written). Floors, not targets: a change that lowers them should be looked at.
    score = measure("offline_holdout.jsonl")
    assert score.precision >= 0.85 and score.recall >= 0.5


def test_undated_plans_and_events_are_below_the_threshold_because_they_are_mostly_wrong() -> None:
    # 20 everyday turns ("I went to the store", "I'll send you the link", "I quit my job at the bank"): the rules for
    # plans and events without a date fire on all kinds of chatter, so they get 0.45 and are not stored by default.
    extractor = RuleExtractor()
    below = right = 0
    for line in (SAMPLES / "offline_chatter.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        at = parse_time(row["timestamp"])
        for draft in extractor.read(row["text"], row["speaker"], at):
            if draft.confidence < 0.6:
                below += 1
                right += any(all(k in draft.text.lower() for k in e["must"]) for e in row["expected"])
    log.info("below the threshold: %d drafts, %d right", below, right)
    assert below >= 10 and right / below < 0.6  # measured when written: 7 of 17
