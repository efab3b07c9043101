"""``RuleExtractor``: the offline default; typed memories from first-person statements by rules, no model needed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memlane.extraction.base import Candidate, ExtractionResult
from memlane.extraction.rewrite import strip_interjections
from memlane.extraction.rules import (
    GENERIC_RULES,
    HEDGE,
    HYPOTHETICAL,
    QUOTED,
    SARCASM,
    SENTENCES,
    SPECIFIC_RULES,
    Clause,
    Draft,
    topic_of,
)
from memlane.models import MemoryItem, MemoryKind


class RuleExtractor:
    """Typed memories from first-person statements, by hand-written rules; offline, deterministic, no model.

    Reads turns by people: ``system``/``tool`` turns are skipped, and so are ``assistant`` turns without a
    speaker name (an AI's "I" is not a person). The speaker's name (or ``"The user"``) replaces "I" and "my";
    relative dates become absolute against the turn's timestamp (``memlane.enrich.temporal``). Questions,
    hypotheticals ("if", "would", "maybe", "I wish"), quoted and reported speech, sarcasm markers ("yeah right",
    "oh great") and deictic objects ("I love that") give nothing; hedged statements ("I think ...") lose 0.2 of
    confidence. Each rule's confidence reflects its measured precision on a labelled sample (see the tests):
    rules that are often wrong sit below the default threshold of 0.6 and are returned but not stored.
    """

    def __init__(self, *, default_subject: str = "The user") -> None:
        self.default_subject = default_subject

    def __repr__(self) -> str:
        return "RuleExtractor()"

    @property
    def identity(self) -> str:
        return "offline-rules-1"

    def extract(self, window: Sequence[MemoryItem], related: Sequence[MemoryItem] = ()) -> ExtractionResult:
        """Candidates from the window's turns; ``related`` is not used by the rules."""
        candidates: list[Candidate] = []
        for message in window:
            if message.kind is not MemoryKind.MESSAGE or message.role in ("system", "tool"):
                continue
            if message.role == "assistant" and not message.speaker:
                continue
            seen: set[str] = set()
            for draft in self.read(message.text, message.speaker or self.default_subject, message.timestamp):
                if draft.text.casefold() in seen:
                    continue
                seen.add(draft.text.casefold())
                candidates.append(
                    Candidate(
                        kind=draft.kind,
                        text=draft.text,
                        confidence=draft.confidence,
                        importance=draft.importance,
                        entities=list(
                            dict.fromkeys([*([message.speaker] if message.speaker else []), *draft.entities])
                        ),
                        event_time=draft.event_time,
                        source_ids=[message.id],
                        subject=draft.subject,
                        attribute=draft.attribute,
                        value=draft.value,
                        category=topic_of(draft.attribute),
                    )
                )
        return ExtractionResult(candidates=candidates)

    def read(self, text: str, subject: str, reference: datetime) -> list[Draft]:
        """The drafts of one turn's text said by ``subject`` at ``reference``."""
        drafts: list[Draft] = []
        for raw in SENTENCES.split(QUOTED.sub(" ", text)):
            sentence = strip_interjections(raw)
            if not sentence or sentence.rstrip().endswith("?"):
                continue
            if HYPOTHETICAL.search(sentence) or SARCASM.search(sentence):
                continue
            clause = Clause(text=sentence, subject=subject, reference=reference, hedged=bool(HEDGE.match(sentence)))
            for rule in SPECIFIC_RULES:
                drafts.extend(rule(clause))
            if not clause.fired:
                for rule in GENERIC_RULES:
                    found = rule(clause)
                    drafts.extend(found)
                    if found:
                        break
        return drafts
