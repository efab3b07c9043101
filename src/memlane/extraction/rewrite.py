"""Rewriting a first-person clause so it stands alone: the speaker's name for "I/my", absolute dates for "next Friday"."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from memlane.enrich.temporal import TimeSpan, extract_times

Prefer = Literal["past", "future"]

_PAST = frozenset(
    [
        "was",
        "were",
        "had",
        "did",
        "got",
        "went",
        "ran",
        "bought",
        "adopted",
        "started",
        "finished",
        "graduated",
        "moved",
        "visited",
        "joined",
        "quit",
        "lost",
        "won",
        "met",
        "booked",
        "completed",
        "passed",
        "traveled",
        "travelled",
        "celebrated",
        "used",
        "made",
        "took",
        "saw",
        "left",
        "came",
        "became",
        "began",
        "found",
        "gave",
        "rescued",
        "got",
        "married",
        "engaged",
        "turned",
        "learned",
        "learnt",
        "tried",
        "thought",
        "knew",
        "felt",
        "told",
        "said",
        "heard",
        "read",
        "wrote",
        "sold",
        "spent",
        "built",
        "broke",
        "fell",
        "flew",
        "drove",
        "rode",
        "swam",
        "sang",
        "taught",
        "caught",
        "brought",
        "kept",
        "slept",
        "sent",
        "paid",
    ]
)
_MODAL = frozenset(
    [
        "can",
        "can't",
        "cannot",
        "could",
        "couldn't",
        "will",
        "won't",
        "would",
        "wouldn't",
        "should",
        "shouldn't",
        "might",
        "must",
        "may",
    ]
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is", "don't": "doesn't"}
_CONTRACTIONS = (
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "{s} is"),
    (re.compile(r"\bI've\b", re.IGNORECASE), "{s} has"),
    (re.compile(r"\bI'd\b", re.IGNORECASE), "{s} would"),
    (re.compile(r"\bI'll\b", re.IGNORECASE), "{s} will"),
    (re.compile(r"\bwe're\b|\bwe are\b", re.IGNORECASE), "{s} and others are"),
    (re.compile(r"\bwe'll\b", re.IGNORECASE), "{s} and others will"),
    (re.compile(r"\bwe've\b", re.IGNORECASE), "{s} and others have"),
)
_ADVERB = r"(?:just|really|also|never|always|usually|often|recently|finally|actually|still|already|even|only|totally|absolutely|truly|sometimes|officially)\s+"
_I_VERB = re.compile(rf"\bI\s+((?:{_ADVERB})*)([A-Za-z']+)", re.IGNORECASE)
_WE_VERB = re.compile(r"\b[Ww]e\s+([A-Za-z']+)")
_WORDS = (
    (re.compile(r"\bmyself\b", re.IGNORECASE), "{s}"),
    (re.compile(r"\bmy\b|\bmine\b", re.IGNORECASE), "{s}'s"),
    (re.compile(r"\bme\b", re.IGNORECASE), "{s}"),
    (re.compile(r"\bour\b", re.IGNORECASE), "their"),
    (re.compile(r"\bus\b", re.IGNORECASE), "{s} and others"),
    (re.compile(r"\bI\b"), "{s}"),
)
_INTERJECTION = re.compile(
    r"^(?:(?:lol|haha+|oh|ah|well|so|yeah|yes|ok(?:ay)?|btw|honestly|actually|guess what|anyway|hey|omg|wow)[,!.]?\s+)+",
    re.IGNORECASE,
)
_LEADING_PREP = re.compile(
    r"^(?:on|in|since|during|until|till|by|before|after|from|of|back\s+in|early|late|mid)[\s-]+", re.IGNORECASE
)
_PREP_BEFORE = re.compile(r"\b(?:on|in|since|during|until|till|by|before|after|from|to|of|between|and)\s*$", re.I)


def third_person(verb: str) -> str:
    """The form of ``verb`` after a third-person singular subject ("love" -> "loves", "went" -> "went")."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _PAST or low in _MODAL or low.endswith(("ed", "n't")) or not low.isalpha():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def strip_interjections(text: str) -> str:
    """Drop leading "lol", "oh", "well", ... and surrounding whitespace."""
    return _INTERJECTION.sub("", text.strip())


def in_third_person(clause: str, subject: str) -> str:
    """``clause`` with the speaker's first person replaced by ``subject`` and verbs agreed ("I love" -> "Maya loves")."""
    out = clause
    for pattern, template in _CONTRACTIONS:
        out = pattern.sub(template.format(s=subject), out)
    out = _I_VERB.sub(lambda m: f"I {m.group(1)}{third_person(m.group(2))}", out)
    out = _WE_VERB.sub(lambda m: f"{subject} and others {m.group(1)}", out)
    for pattern, template in _WORDS:
        out = pattern.sub(template.format(s=subject), out)
    return out


def _render(span: TimeSpan) -> tuple[str, str] | None:
    """The preposition and absolute words for a resolved span, or None to leave its words as they are."""
    day = span.start.date().isoformat()
    if span.granularity == "day":
        return "on", day
    if span.granularity == "weekend":
        return "on", f"the weekend of {day}"
    if span.granularity == "week":
        return "in", f"the week of {day}"
    if span.granularity == "month":
        return "in", span.start.strftime("%B %Y")
    if span.granularity == "year":
        return "in", str(span.start.year)
    return None


def absolutise(text: str, reference: datetime, prefer: Prefer | None = None) -> tuple[str, datetime | None]:
    """Replace relative time phrases in ``text`` by absolute dates; also return the first span's start.

    "next Friday" becomes "on 2025-07-04", "in June" "in June 2026", "last year" "in 2024". Habitual phrases
    ("every Tuesday") are left alone and give no time.
    """
    spans = extract_times(text, reference, prefer=prefer)
    first: datetime | None = None
    out = text
    for span in spans:
        position = out.find(span.text)
        if position < 0:
            continue
        before = out[:position]
        if re.search(r"\b(?:every|each)\s*$", before, re.IGNORECASE):
            continue
        rendered = _render(span)
        if first is None:
            first = span.start
        if rendered is None:
            continue
        prep, words = rendered
        own = _LEADING_PREP.match(span.text)
        if own:
            replacement = own.group(0) + words
        elif _PREP_BEFORE.search(before):
            replacement = words
        else:
            replacement = f"{prep} {words}"
        out = before + replacement + out[position + len(span.text) :]
    return out, first


def finish_sentence(text: str) -> str:
    """Capitalise, collapse spaces, end with a full stop; a default subject ("The user") inside the sentence is
    written in lower case ("Rex is the user's dog.").
    """
    text = " ".join(text.split()).strip(" ,;:-")
    text = re.sub(r"(?<=\S )The user\b", "the user", text)
    text = re.sub(r"[!.]+$", "", text).strip()
    if not text:
        return text
    return text[0].upper() + text[1:] + "."
