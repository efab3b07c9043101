"""The rules' skip reads non-ASCII text as the patterns do: a text drawn from a rule's own pattern over ASCII mixed
with accented letters, the look-alikes case-insensitive matching accepts, non-ASCII spaces and quotes and other
scripts gets the same matches from ``match_rules`` as from running every pattern.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.security.rule_base import Rule
from memlane.security.rules import RULES, match_rules, match_rules_fully

_WIDE = list("éÉèàâäÄöÖüÜßẞñÑóíîúçK\u017f\u0131\u0130\u00a0\u3000\u2028“„«‚日ж\u0301ﬁ²")
_ALPHABET = st.characters(codec="ascii") | st.sampled_from(_WIDE)


def _check(rule: Rule, examples: int) -> None:
    quiet = [HealthCheck.filter_too_much, HealthCheck.too_slow]

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=quiet)
    @given(st.from_regex(rule.pattern, alphabet=_ALPHABET))
    def check(text: str) -> None:
        assert match_rules(text) == match_rules_fully(text)

    check()


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_the_skip_never_hides_a_match_in_non_ascii_text(rule: Rule) -> None:
    _check(rule, 10)


@pytest.mark.slow
@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_the_skip_never_hides_a_match_in_non_ascii_text_thoroughly(rule: Rule) -> None:
    _check(rule, 300)
