"""The offline extractor's rules: patterns over one first-person sentence, each proposing typed drafts."""

from memlane.extraction.rules.base import (
    HEDGE,
    HYPOTHETICAL,
    QUOTED,
    SARCASM,
    SENTENCES,
    Clause,
    Draft,
    RuleFn,
    topic_of,
)
from memlane.extraction.rules.changes import ages, cancelled, giving_up, work
from memlane.extraction.rules.others import events, named_things, people, plans
from memlane.extraction.rules.speaker import facts, preferences

#: Rules for specific statements, all tried on every sentence.
SPECIFIC_RULES: tuple[RuleFn, ...] = (giving_up, work, cancelled, preferences, facts, people, named_things, ages)
#: Broad rules, tried in order only when no specific rule fired; the first that proposes something wins.
GENERIC_RULES: tuple[RuleFn, ...] = (plans, events)

__all__ = [
    "GENERIC_RULES",
    "HEDGE",
    "HYPOTHETICAL",
    "QUOTED",
    "SARCASM",
    "SENTENCES",
    "SPECIFIC_RULES",
    "Clause",
    "Draft",
    "RuleFn",
    "topic_of",
]
