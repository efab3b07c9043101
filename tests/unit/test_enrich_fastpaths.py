"""The write-time shortcuts give what the plain computations they replace give."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memlane.embedding.fake import HashEmbedder
from memlane.enrich.classify import (
    _PLAN,
    _PLAN_LOWER,
    _PREFERENCE,
    _PREFERENCE_LOWER,
    _REQUEST,
    _REQUEST_LOWER,
    INTENTS,
    IntentClassifier,
    _may_request,
    rule_intent,
)
from memlane.enrich.cues import NOT_WORD_TO_SPACE, ascii_words
from memlane.enrich.entities import _CAP_RUN, _cap_runs
from memlane.enrich.importance import _FIRST_PERSON_FACT, _FIRST_PERSON_FACT_LOWER
from memlane.enrich.temporal import _DIGIT, _LETTERS, _TIME_WORDS, _may_have_time

TURNS = [
    "Can you remind me to call my mom tomorrow?",
    "I love hiking in the mountains.",
    "I'm going to visit my parents next week.",
    "What did you do last weekend?",
    "We adopted a dog three years ago.",
    "I'm so happy and grateful right now!",
    "ok",
    "",
    "Please send me the recipe.",
    "Next_week I fly to Paris.",
    "Fünf Tage später, on Monday",
]


def test_intent_probabilities_equal_the_row_by_row_rules() -> None:
    classifier = IntentClassifier(HashEmbedder(dim=64), INTENTS)
    vectors = classifier._embedder.embed(TURNS)
    fast = classifier._probabilities(vectors, TURNS)
    slow = classifier._prototypes.probabilities(vectors)
    labels = classifier.labels
    for row, text in enumerate(TURNS):
        rule = rule_intent(text)
        if rule is not None and rule in labels:
            slow[row] *= 1.0 - classifier._rule_weight
            slow[row, labels.index(rule)] += classifier._rule_weight
        else:
            slow[row, classifier._gated] = 0.0
            slow[row] /= max(float(slow[row].sum()), 1e-12)
    assert np.array_equal(fast.view(np.uint32), slow.view(np.uint32))  # bit for bit


_WORDS = st.sampled_from(["today", "Monday", "may", "day", "days", "x_week", "week_", "2023", "ſept", "MAY", "ok"])
_TEXTS = st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=8).map(" ".join)


@given(_TEXTS)
def test_time_word_test_equals_the_letter_runs(text: str) -> None:
    plain = _DIGIT.search(text) is not None or not _TIME_WORDS.isdisjoint(_LETTERS.findall(text.lower()))
    assert _may_have_time(text) == plain


_REQUEST_SOUP = st.lists(
    st.sampled_from(["Can", "you", "YOU", "me", "let", "Please", "pls", "Recommend", "list", "would", "mind", "ſ", "x"])
    | st.sampled_from(list(" .,-'!?\n")),
    max_size=10,
)


@given(_REQUEST_SOUP.map(" ".join) | _REQUEST_SOUP.map("".join))
def test_request_gate_never_skips_a_request(text: str) -> None:
    assert _may_request(text) or _REQUEST.search(text) is None


_CAPS_SOUP = st.lists(
    st.sampled_from(["Anna", "Mr.", "Dr. ", "de", "of", "Bank", "O'Neil", "’s", "José", "ÉLAN", "x", "I", "iPhone"])
    | st.sampled_from(list(" .,-'’\n(")),
    max_size=12,
)


@given(_CAPS_SOUP.map(" ".join) | _CAPS_SOUP.map("".join))
def test_capitalised_runs_are_what_finditer_finds(text: str) -> None:
    assert [m.span() for m in _cap_runs(text)] == [m.span() for m in _CAP_RUN.finditer(text)]


_ASCII_SOUP = st.lists(
    st.sampled_from(
        [
            "My",
            "SISTER",
            "I",
            "we",
            "We",
            "LOVE",
            "really",
            "can't",
            "'m",
            "into",
            "plan",
            "Will",
            "you",
            "Please",
            "me",
        ]
    )
    | st.sampled_from(["going to", "next week", "my fav", "x_y", "2023", "_", "A1b", "\x1f", "\x0b", "\x7f"])
    | st.sampled_from(list(" .,-'!?\n\t")),
    max_size=12,
)


@given(_ASCII_SOUP.map(" ".join) | _ASCII_SOUP.map("".join) | st.text(st.characters(max_codepoint=127), max_size=40))
def test_ascii_words_are_the_word_runs_and_lower_cased_scans_match(text: str) -> None:
    assert ascii_words(text) == frozenset(re.findall(r"\w+", text.lower()))
    assert len(text.lower().translate(NOT_WORD_TO_SPACE).split()) == len(re.findall(r"\w+", text))
    for pattern, lowered in (
        (_REQUEST, _REQUEST_LOWER),
        (_PREFERENCE, _PREFERENCE_LOWER),
        (_PLAN, _PLAN_LOWER),
        (_FIRST_PERSON_FACT, _FIRST_PERSON_FACT_LOWER),
    ):
        found, fast = pattern.search(text), lowered.search(text.lower())
        assert (found and found.span()) == (fast and fast.span())


@given(_ASCII_SOUP.map(" ".join) | st.text(max_size=30))
def test_ascii_words_is_none_outside_ascii(text: str) -> None:
    assert (ascii_words(text) is None) == (not text.isascii())
