"""The building blocks of the injection rules: a named, weighted pattern (``Rule``), a match (``RuleMatch``), and
helpers to write them (``rx``, ``cues``, ``needs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """A named pattern and how much its match says (1.0: enough to flag alone).

    ``cues``, ``marks`` and ``needs`` let plain ASCII text skip the pattern: every match holds one of the ``cues``
    as a whole word (lower case) or one of the ``marks`` characters (a rule with neither always runs), and one of
    the ``needs`` (lower case) anywhere (a rule without them needs nothing more). Rules of one ``family`` (two
    readings of the same sign) count once, at the weight of the strongest that matched.
    """

    name: str
    pattern: re.Pattern[str]
    weight: float
    cues: frozenset[str] = frozenset()
    marks: str = ""
    needs: tuple[str, ...] = ()
    family: str = ""


@dataclass(frozen=True)
class RuleMatch:
    """A rule that matched, where (``payload`` when inside decoded base64/hex), its weight and its family."""

    name: str
    weight: float
    payload: bool = False
    family: str = ""

    @property
    def group(self) -> str:
        """What this match counts under: its family, or its own name."""
        return self.family or self.name


def rx(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled case-insensitive, ``^`` and ``$`` at every line."""
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


def cues(words: str) -> frozenset[str]:
    """The space-separated ``words`` as a rule's cue set."""
    return frozenset(words.split())


def needs(texts: str, *more: str) -> tuple[str, ...]:
    """The ``|``-separated ``texts`` (and ``more``) as a rule's needs."""
    return (*texts.split("|"), *more)
