"""Routines: recurring actions found in a person's dated turns ("goes running most Saturday mornings")."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memlane.enrich.entities import canonical
from memlane.extraction.rules.base import HYPOTHETICAL, gerund
from memlane.models import MemoryItem, MemoryKind

_ADVERBS = r"(?:(?:usually|always|often|just|also|finally|again|still|really)\s+)*"
_GO: Final = re.compile(rf"\b(?:i|we)\s+{_ADVERBS}(?:go|went|gone|going)\s+(?P<act>[a-z]{{3,}}ing)\b", re.I)
_IRREGULAR: Final = {"ran": "run", "swam": "swim", "rode": "ride", "drove": "drive", "took": "take"}
_DONE: Final = re.compile(
    rf"\b(?:i|we)\s+{_ADVERBS}(?P<verb>ran|run|swam|swim|hiked|hike|jogged|jog|cycled|cycle|rode|ride|"
    r"practi[sc]ed|practi[sc]e|called|call|visited|visit|played|play|baked|bake|painted|paint|meditated|meditate)\b"
    r"(?P<obj>\s+(?:my|our)\s+[a-z]+|\s+(?!with|to|at|in|on|for|and|so|but|a|an|the|my|our)[a-z]{3,})?",
    re.I,
)
_WEEKDAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_OWNER: Final = re.compile(r"\b(?:my|our)\b", re.I)


def _part_of_day(at: datetime) -> str:
    hour = at.hour
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 22:
        return "evening"
    return "night"


def activities(text: str) -> list[str]:
    """The actions a first-person turn says were done ("I went running" -> "running", "we called our mum" ->
    "calling their mum"); questions and hypotheticals give none.
    """
    found: dict[str, None] = {}
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        if not sentence or sentence.rstrip().endswith("?") or HYPOTHETICAL.search(sentence):
            continue
        for m in _GO.finditer(sentence):
            found.setdefault(m.group("act").lower(), None)
        for m in _DONE.finditer(sentence):
            obj = _OWNER.sub("their", (m.group("obj") or "").strip().lower())
            found.setdefault(f"{gerund(_stem(m.group('verb').lower()))} {obj}".strip(), None)
    return list(found)


def _stem(verb: str) -> str:
    """The base form of a verb ("ran" -> "run", "hiked" -> "hike", "jogged" -> "jog", "played" -> "play")."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if not verb.endswith("ed"):
        return verb
    stem = verb[:-2]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "ls":  # jogged
        return stem[:-1]
    if stem.endswith(("ik", "ac", "is", "iz", "at", "it", "in", "ak", "yc")):  # hiked, practised, meditated
        return stem + "e"
    return stem


@dataclass(frozen=True)
class Routine:
    """A recurring action of one person: when it recurs, how sure, and the memories that show it."""

    who: str
    activity: str
    weekday: str | None
    part_of_day: str | None
    occurrences: int
    confidence: float
    sources: tuple[str, ...]
    first: datetime
    last: datetime

    @property
    def text(self) -> str:
        """The routine as a sentence: "Routine of Melanie: running most Saturday mornings (4 times from ...)"."""
        when = " regularly"
        if self.weekday:
            when = f" most {self.weekday} {self.part_of_day}s" if self.part_of_day else f" most {self.weekday}s"
        elif self.part_of_day:
            when = f" in the {self.part_of_day}s"
        span = f"{self.occurrences} times from {self.first.date().isoformat()} to {self.last.date().isoformat()}"
        return f"Routine of {self.who}: {self.activity}{when} ({span})."

    @property
    def attribute(self) -> str:
        return f"routine {self.activity}"


def detect_routines(
    items: Sequence[MemoryItem], *, min_occurrences: int = 3, min_share: float = 0.6, default_who: str = "The user"
) -> list[Routine]:
    """Routines in one user's turns: an action one person did on at least ``min_occurrences`` distinct days.

    When at least ``min_share`` of those days fall on one weekday (or one part of the day), the routine says so.
    Confidence grows with the number of days (full at six) and with how regular the days are.
    """
    seen: dict[tuple[str, str], dict[str, tuple[datetime, str]]] = {}
    for item in items:
        if item.kind is not MemoryKind.MESSAGE or item.role in ("system", "tool", "assistant"):
            continue
        who = item.speaker or default_who
        at = item.event_time or item.timestamp
        for act in activities(item.text):
            days = seen.setdefault((who, act), {})
            days.setdefault(at.date().isoformat(), (at, item.id))
    out: list[Routine] = []
    for (who, act), days in seen.items():
        n = len(days)
        if n < min_occurrences:
            continue
        times = sorted(t for t, _ in days.values())
        weekday, w_count = Counter(_WEEKDAYS[t.weekday()] for t in times).most_common(1)[0]
        part, p_count = Counter(_part_of_day(t) for t in times).most_common(1)[0]
        timed = any(t.hour or t.minute for t in times)  # dates without a time of day say nothing about it
        on_day = w_count / n >= min_share
        in_part = timed and p_count / n >= min_share
        regularity = max(w_count / n if on_day else 0.5, p_count / n if in_part else 0.5)
        out.append(
            Routine(
                who=who,
                activity=act,
                weekday=weekday if on_day else None,
                part_of_day=part if in_part else None,
                occurrences=n,
                confidence=round(min(1.0, n / 6) * regularity, 2),
                sources=tuple(i for _, i in sorted(days.values())),
                first=times[0],
                last=times[-1],
            )
        )
    return sorted(out, key=lambda r: (-r.confidence, canonical(r.who), r.activity))
