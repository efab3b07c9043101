"""The quick tests that let write-time enrichment skip a scan never skip one that matches: texts drawn from each
pattern (in ASCII, where the tests apply) always pass its cue test, and the time-expression scan that tries the
pattern only at possible starts finds what ``finditer`` finds.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.enrich import aliases, classify, entities, temporal
from memlane.enrich.cues import ascii_words, may_hold

_ASCII = st.characters(codec="ascii")
# from_regex draws then rejects what misses the word boundaries: much filtering is expected
_QUIET = [HealthCheck.filter_too_much, HealthCheck.too_slow]


def _cued(cues: frozenset[str]) -> Callable[[str], bool]:
    return lambda text: may_hold(text, cues)


_CUED: list[tuple[str, re.Pattern[str], Callable[[str], bool]]] = [
    ("kin mention", entities._KIN_MENTION, _cued(entities.KIN_CUES)),
    ("possessive kin", entities._POSSESSIVE_KIN, _cued(entities.KIN_CUES)),
    ("named kin", aliases._NAMED_KIN, _cued(entities.KIN_CUES)),
    ("a kin named", aliases._A_KIN_NAMED, _cued(entities.KIN_CUES)),
    ("name then kin", aliases._NAME_THEN_KIN, _cued(entities.KIN_CUES)),
    ("your named kin", aliases._YOUR_NAMED_KIN, _cued(entities.KIN_CUES)),
    ("request", classify._REQUEST, classify._may_request),
    ("preference", classify._PREFERENCE, _cued(classify._PREFERENCE_CUES)),
    ("plan", classify._PLAN, _cued(classify._PLAN_CUES)),
    ("future cue", temporal._FUTURE_CUE, _cued(temporal._FUTURE_CUES)),
]


def _check_cues(pattern: re.Pattern[str], gate: Callable[[str], bool], examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=_QUIET)
    @given(st.from_regex(pattern, alphabet=_ASCII))
    def check(text: str) -> None:
        assert pattern.search(text) is not None
        assert gate(text), (text, sorted(ascii_words(text) or ()))

    check()


@pytest.mark.parametrize(("pattern", "gate"), [(p, c) for _, p, c in _CUED], ids=[n for n, _, _ in _CUED])
def test_a_cue_test_never_skips_a_match(pattern: re.Pattern[str], gate: Callable[[str], bool]) -> None:
    _check_cues(pattern, gate, 25)


@pytest.mark.slow
@pytest.mark.parametrize(("pattern", "gate"), [(p, c) for _, p, c in _CUED], ids=[n for n, _, _ in _CUED])
def test_a_cue_test_never_skips_a_match_thoroughly(pattern: re.Pattern[str], gate: Callable[[str], bool]) -> None:
    _check_cues(pattern, gate, 500)


def test_the_cheap_gates_hold_what_their_patterns_need() -> None:
    # every mixed-case word has a small letter then a capital; every quantity a digit
    for text in ("my iPhone", "an eBay deal", "ran 5 km", "$20", "٣ kids"):
        for pattern, gate in ((entities._MIXED_CASE, entities._SMALL_CAPITAL), (entities._QUANTITY, entities._DIGIT)):
            assert pattern.search(text) is None or gate.search(text) is not None


def test_non_ascii_text_is_never_skipped() -> None:
    # "ſ" matches "s" case-insensitively: the cue words cannot be trusted outside ASCII
    assert entities._KIN_MENTION.search("my ſister") is not None
    assert may_hold("my ſister", entities.KIN_CUES)
    assert not may_hold("a plain sentence", entities.KIN_CUES)


def _same_scan(text: str) -> None:
    expected = [(m.span(), m.groupdict()) for m in temporal._CANDIDATES.finditer(text)]
    assert [(m.span(), m.groupdict()) for m in temporal._scan(text)] == expected


_TIME_WORDS = sorted(set(re.findall(r"[A-Za-z]+", " ".join(temporal._PATTERNS))))
_PIECES = st.sampled_from([*_TIME_WORDS, "2023", "1999", "8th", "5/8/2023", "2023-05-08", "$2000", "3", "12"]) | (
    st.sampled_from(list(" .,-'\n$%"))
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=14).map(" ".join) | st.lists(_PIECES, max_size=14).map("".join))
def test_time_scan_finds_what_finditer_finds_in_word_soup(text: str) -> None:
    _same_scan(text)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=_QUIET)
@given(st.from_regex(temporal._CANDIDATES, alphabet=_ASCII))
def test_time_scan_finds_what_finditer_finds_around_real_matches(text: str) -> None:
    _same_scan(text)


def test_time_scan_of_text_outside_ascii_and_on_edges() -> None:
    edges = ["", "May", "on ſunday", "in 2023.", "2023-05-08 and 8 May 2023", "3 weeks ago, last weekend"]
    # every optional spelling of a first word: "sep" of "sept?", "mid-" June, "back in" 1999, "a couple of" days
    edges += ["Sep 8, 2023", "sep. 2023", "mid-june", "back in 1999", "a couple of days ago", "Over the weekend"]
    for text in edges:
        _same_scan(text)
