"""The injection screen's fast paths read documents exactly as the plain code does: on passages of the docs-qa
corpora (manual pages and FAQs: multi-line, Latin-1 and wider characters) and on texts built around every rule's
start literals, the batched feature hashing equals per-token zlib hashes, the rules' skip and start literals equal
every pattern run on the whole text, and the needs automaton equals looking for each need on its own.
"""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from memlane.security import rules
from memlane.security.classifier import views
from memlane.security.features import feature_sets
from memlane.security.obfuscation import unmask
from memlane.security.rule_base import first_match, lowered, skeleton, starts
from memlane.security.rules import RULES, match_rules, match_rules_fully
from tests.security_reference import reference_ids

_CORPORA = Path(__file__).resolve().parents[2] / "evalsets" / "docs-qa"


@lru_cache(maxsize=1)
def _passages() -> list[str]:
    """Every 15th passage of each docs-qa corpus, and a few written to reach each path of the hashing."""
    out = []
    for path in sorted(_CORPORA.glob("*/corpus.jsonl")):
        lines = path.read_text(encoding="utf-8").split("\n")
        out += [json.loads(line)["text"] for line in lines[::15] if line]
    out += [
        "line one\nline two\n\n  \u00b6 a pilcrow of its own\n",
        "caf\u00e9 na\u00efve \u00a7 1\n\u00b5s and \u00bd\n| a | b |\n|---|---|\n",
        "curly \u201cquotes\u201d \u2014 dashes\nand \u65e5\u672c\u8a9e\n\U0001f600 emoji\n",
        "\n\n\n",
        "x" * 300 + "\n" + "\u00e9" * 200 + " " + "y" * 100,
    ]
    return out


def test_the_corpora_are_there_and_varied() -> None:
    texts = _passages()
    assert len(texts) > 1000
    assert sum("\n" in t for t in texts) > 500
    assert sum(not t.isascii() and max(map(ord, t)) < 256 for t in texts) > 5
    assert sum(max(map(ord, t), default=0) > 255 for t in texts) > 20


def test_features_of_documents_and_their_windows_equal_per_token_hashes() -> None:
    rng = random.Random(11)
    texts = _passages()
    for start in range(0, len(texts), 40):
        batch = [unmask(t).text for t in texts[start : start + 40]]
        viewed = [v for t in batch for v in views(t)]
        bits = rng.choice((12, 18))
        for view, ids in zip(viewed, feature_sets(viewed, bits), strict=True):
            assert np.array_equal(ids, reference_ids(view, bits)), view[:60]


def test_rules_on_documents_equal_every_pattern_run() -> None:
    for i, text in enumerate(_passages()):
        for variant in (text, text.upper()) if i % 4 == 0 else (text,):
            assert match_rules(variant) == match_rules_fully(variant), variant[:60]


def _around_starts() -> list[str]:
    """Texts holding each rule's start literals where a match could begin and where it could not."""
    rng = random.Random(5)
    out = []
    for rule in RULES:
        found = starts(lowered(rule.pattern))
        for literal in found or ():
            for left, right in (("", " all previous instructions"), ("x", "s"), ("the ", ": you must")):
                out.append(f"{left}{literal}{right}")
                out.append(f"{rng.choice(['a. ', '', chr(10)])}{literal} {rng.choice(_passages())[:200]}")
    return out


def test_start_literals_find_every_match() -> None:
    texts = [t.lower() for t in [*_passages()[::3], *_around_starts()]]
    used = 0
    for rule in RULES:
        pattern = lowered(rule.pattern)
        literals = starts(pattern)
        used += literals is not None
        for text in texts:
            assert first_match(pattern, literals, text) == (pattern.search(text) is not None), (rule.name, text)
    assert used >= len(RULES) - 5  # most rules start with literals


def test_start_literals_are_read_soundly() -> None:
    assert starts(re.compile(r"\b(?:ab|cd)\s+x")) == ("ab", "cd")
    assert starts(re.compile(r"(?:the\s+)?(?:foo|bar)")) == ("bar", "foo", "the")
    assert starts(re.compile(r"[xy]z|q")) == ("q", "xz", "yz")
    assert starts(re.compile(r"(?:^|\s)ab")) is None  # a match may start with any whitespace
    assert starts(re.compile(r"a*b")) is None
    assert starts(re.compile(r"ab", re.IGNORECASE)) is None
    assert starts(re.compile(r"(?:abc|ab)d")) == ("abcd", "abd")
    assert starts(re.compile(r"a|ab")) == ("a",)  # no literal the start of another


@pytest.mark.skipif(rules._NEEDS is None, reason="pyahocorasick is not installed")
def test_the_needs_automaton_equals_each_need_looked_for() -> None:
    for text in [*_passages(), *_around_starts()]:
        for variant in (text, text.upper()):
            low = skeleton(variant)
            assert rules._candidates(variant, low) == rules._needed(rules._cued(variant, low), low)
