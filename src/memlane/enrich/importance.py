"""Scoring how important a memory is at write time, by simple replaceable heuristics."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

from memlane.enrich.cues import NOT_WORD_TO_SPACE
from memlane.enrich.entities import EntityMention, extract_entities
from memlane.enrich.temporal import candidate_spans

BASE: Final = 0.3

#: Typed memories are distilled on purpose; raw turns start lower.
KIND_BONUS: Final = {
    "message": 0.0,
    "fact": 0.2,
    "preference": 0.2,
    "plan": 0.2,
    "event": 0.2,
    "relation": 0.15,
    "entity": 0.1,
}

_FIRST_PERSON_FACT: Final = re.compile(
    r"\b(?:i|we)\s*(?:am|'m|are|'re|was|were|have|'ve|had|got|work|worked|live|lived|moved|started|adopted|"
    r"married|graduated|joined|bought|love|hate|prefer|plan|will|'ll|am going to|'m going to)\b|"
    r"\bmy\s+(?:name|job|wife|husband|partner|sister|brother|mom|mother|dad|father|son|daughter|kids?|dog|cat|"
    r"favou?rite|birthday|goal|dream|plan|home|house|allergy|doctor)\b",
    re.IGNORECASE,
)
_SMALLTALK: Final = re.compile(
    r"^\W*(?:hi|hey|hello|thanks|thank you|thx|wow|cool|nice|great|awesome|lol|haha|ok|okay|sure|yeah|yes|no|bye)\b"
    r"[\W\w]{0,30}$",
    re.IGNORECASE,
)
_WORD: Final = re.compile(r"\w+")
# For plain ASCII text lower-cased: the same matches at the same offsets, about twice as fast (see ``rule_intent``).
_FIRST_PERSON_FACT_LOWER: Final = re.compile(_FIRST_PERSON_FACT.pattern)


@runtime_checkable
class ImportanceScorer(Protocol):
    """The seam for importance scoring; ``importance`` below is the default."""

    def __call__(
        self,
        text: str,
        *,
        role: str | None,
        kind: str,
        is_question: bool | None = None,
        mentions: Sequence[EntityMention] | None = None,
        has_time: bool | None = None,
    ) -> float:
        """A score in [0, 1]; ``mentions`` (entity mentions) and ``has_time`` (whether the text has a time
        expression) when the caller already computed them.
        """
        ...


def importance(
    text: str,
    *,
    role: str | None,
    kind: str,
    is_question: bool | None = None,
    mentions: Sequence[EntityMention] | None = None,
    has_time: bool | None = None,
) -> float:
    """How important a memory is, in [0, 1]: the base 0.3 adjusted by the heuristics below.

    - length: up to +0.15, growing with the word count to 40 words; under 4 words -0.1;
    - a first-person durable fact ("I work", "my sister", "I'm allergic") +0.15;
    - named entities +0.05 each, up to +0.15; dates, quantities, money +0.05;
    - a question (``is_question``, or a trailing ``?`` when not given) -0.15; pure small talk -0.15;
    - an assistant or system turn -0.15;
    - a typed memory kind (fact, preference, plan, event) +0.2 over a raw message (``KIND_BONUS``).

    Pass the turn's ``mentions`` and ``has_time`` when they were already computed, to save computing them again.
    """
    stripped = text.strip()
    if not stripped:
        return 0.0
    score = BASE
    lower = stripped.lower() if stripped.isascii() else None
    if lower is None:
        words = len(_WORD.findall(stripped))
        fact = _FIRST_PERSON_FACT.search(stripped)
    else:  # in ASCII the word runs are what is left between non-word characters
        words = len(lower.translate(NOT_WORD_TO_SPACE).split())
        fact = _FIRST_PERSON_FACT_LOWER.search(lower)
    score += 0.15 * min(words, 40) / 40
    if words < 4:
        score -= 0.1
    if fact:
        score += 0.15
    if mentions is None:
        mentions = extract_entities(stripped)
    named = sum(1 for m in mentions if m.kind in ("person", "place", "organisation", "product", "other"))
    score += min(named, 3) * 0.05
    if has_time is None:
        has_time = bool(candidate_spans(stripped))
    if has_time or any(m.kind == "quantity" for m in mentions):
        score += 0.05
    question = stripped.endswith("?") if is_question is None else is_question
    if question:
        score -= 0.15
    if _SMALLTALK.match(stripped) and words <= 8:
        score -= 0.15
    if role is not None and role.lower() in ("assistant", "system", "tool"):
        score -= 0.15
    score += KIND_BONUS.get(kind.lower(), 0.1)
    return round(min(1.0, max(0.0, score)), 4)
