"""The batched injection screen reads exactly what the plain per-text one read: the same classifier features, the
same rule matches (the rules' ASCII cues never hide a match), the same unmasked text.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.security.classifier import feature_ids, feature_sets
from memlane.security.rules import RULES, Rule, match_rules
from tests.security_reference import reference_ids

# Letters of several scripts and widths, accents, an emoji, case-folding oddities (ß, ſ, K), line breaks and tabs.
_CHARS = st.sampled_from(list("abc XYZ\n\t.,!é\u0301ßſ\u212aΣ日😀-_'"))
_TEXTS = st.text(_CHARS, max_size=60) | st.text(max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXTS, max_size=6), st.sampled_from([10, 18]))
def test_batched_features_equal_the_per_token_hashes(texts: list[str], bits: int) -> None:
    for text, ids in zip(texts, feature_sets(texts, bits), strict=True):
        assert np.array_equal(ids, reference_ids(text, bits))


def test_features_of_very_long_words_and_documents() -> None:
    texts = ["x" * 300 + " tail", "aé" * 200, "line one\nline two\n\n| a | b |\n" * 50, "", "   "]
    for text, ids in zip(texts, feature_sets(texts), strict=True):
        assert np.array_equal(ids, reference_ids(text))
    assert np.array_equal(feature_ids(texts[0]), reference_ids(texts[0]))


def _check_cues(rule: Rule, examples: int) -> None:
    """Texts holding a match of the rule (drawn from its own pattern, in ASCII where the cues apply) match it."""

    # from_regex draws then rejects what misses the word boundaries: much filtering is expected
    quiet = [HealthCheck.filter_too_much, HealthCheck.too_slow]

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=quiet)
    @given(st.from_regex(rule.pattern, alphabet=st.characters(codec="ascii")))
    def check(text: str) -> None:
        assert [m.name for m in match_rules(text)] == [r.name for r in RULES if r.pattern.search(text)]

    check()


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule_cues_never_hide_a_match(rule: Rule) -> None:
    _check_cues(rule, 8)


@pytest.mark.slow
@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule_cues_never_hide_a_match_thoroughly(rule: Rule) -> None:
    _check_cues(rule, 400)


def _ascii_spelling(source: str) -> str:
    """The pattern as plain ASCII text spells it: ``despu[ée]s`` -> ``despues``, ``chat ?bot`` -> ``chatbot``."""
    source = re.sub(r"\[[^\]a-z]*([a-z])[^\]a-z]*\]", r"\1", source)
    return source.replace(" ?", "")


def test_every_cue_is_written_in_its_pattern() -> None:
    for rule in RULES:
        source = rule.pattern.pattern.lower()
        source += "\n" + _ascii_spelling(source)
        assert rule.cues or rule.marks or rule.needs, rule.name  # something lets plain text skip it
        for cue in rule.cues:  # or its stem, when the pattern spells the endings apart: ignorier(?:e|en|t)?, {_AI}s?
            assert cue in source or re.sub(r"(?:e|en|t|ing|ed|s)$", "", cue) in source, (rule.name, cue)
        for mark in rule.marks:
            assert mark in source, (rule.name, mark)
