"""The relation reader skips a pattern only where it cannot match: texts drawn from each pattern always hold its
cue, and the reader reads what it reads with every pattern run on every sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.enrich.aliases import _A_KIN_NAMED, _NAME_THEN_KIN, _NAMED_KIN, EntityResolver
from memlane.extraction.rules.base import HYPOTHETICAL
from memlane.graph import relations
from memlane.graph.relations import _LIKES, _LIVES, _WORKS, USER_NODE, RelationReader, _Cues
from memlane.graph.types import RelationClaim
from memlane.models import MemoryItem

T0 = datetime(2024, 3, 1, tzinfo=UTC)
# from_regex draws then rejects what misses the word boundaries: much filtering is expected
_QUIET = [HealthCheck.filter_too_much, HealthCheck.too_slow]

_CUED: list[tuple[str, re.Pattern[str], str]] = [
    ("named kin", _NAMED_KIN, "kin"),
    ("a kin named", _A_KIN_NAMED, "kin"),
    ("name then kin", _NAME_THEN_KIN, "kin"),
    ("works", _WORKS, "works"),
    ("lives", _LIVES, "lives"),
    ("likes", _LIKES, "likes"),
]


def _check_cue(pattern: re.Pattern[str], family: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=_QUIET)
    @given(st.from_regex(pattern))  # any characters: the patterns take no flags, so the cues match as written
    def check(text: str) -> None:
        assert pattern.search(text) is not None
        assert getattr(_Cues.of(text), family), text
        assert getattr(_Cues.of(text, _Cues.of(text)), family), text

    check()


@pytest.mark.parametrize(("pattern", "family"), [(p, f) for _, p, f in _CUED], ids=[n for n, _, _ in _CUED])
def test_a_cue_never_skips_a_match(pattern: re.Pattern[str], family: str) -> None:
    _check_cue(pattern, family, 40)


@pytest.mark.slow
@pytest.mark.parametrize(("pattern", "family"), [(p, f) for _, p, f in _CUED], ids=[n for n, _, _ in _CUED])
def test_a_cue_never_skips_a_match_thoroughly(pattern: re.Pattern[str], family: str) -> None:
    _check_cue(pattern, family, 600)


def _unskipped(reader: RelationReader, item: MemoryItem) -> list[RelationClaim]:
    """What the reader reads when every pattern runs on every sentence (the reader before its cues)."""
    if item.role == "assistant" and not item.speaker:
        return []
    me = relations.canonical(item.speaker) if item.speaker else USER_NODE
    every = _Cues(True, True, True, True)
    out: dict[tuple[str, str, str], RelationClaim] = {}
    for sentence in relations._SENTENCES.split(item.text):
        if not sentence or sentence.rstrip().endswith("?") or HYPOTHETICAL.search(sentence):
            continue
        for claim in reader._sentence(sentence, me, item, every):
            if claim.subject and claim.object and claim.subject != claim.object:
                out.setdefault((claim.subject, claim.predicate, claim.object), claim)
    return list(out.values())


# fmt: off
_WORDS = [
    "I", "we", "We", "My", "my", "our", "Our", "sister", "dog", "son", "best", "little", "named", "called", "is",
    "Anna", "Rex", "Dr", "Okafor", ",", "(", "-", "work", "works", "working", "at", "for", "job", "got", "a",
    "interns", "live", "lived", "moved", "relocated", "in", "to", "Denver", "love", "likes", "enjoy", "adore",
    "into", "passionate", "about", "obsessed", "with", "fan", "of", "the", "beach", "hiking", "not", "never", "if",
    "would", "maybe", "?", ".", "!", "\n", "Acme", "Bank", "of", "America", "'s", "’s",
]
# fmt: on
_PIECES = st.sampled_from(_WORDS) | st.from_regex(r"[A-Za-z’'-]{1,8}", fullmatch=True)
_TEXTS = st.lists(_PIECES, max_size=24).map(" ".join) | st.lists(_PIECES, max_size=24).map("".join)


def _item(text: str, speaker: str | None, role: str) -> MemoryItem:
    return MemoryItem(
        id="m1", user_id="u", role=role, speaker=speaker, text=text, timestamp=T0, created_at=T0,
        updated_at=T0, content_hash="h",
    )  # fmt: skip


def _reader(texts: Iterable[str]) -> RelationReader:
    resolver = EntityResolver()
    for text in texts:
        resolver.observe(text, None, "user")
    return RelationReader(resolver)


_DRAWN = st.sampled_from([p for _, p, _ in _CUED]).flatmap(st.from_regex)


def _check_reader(examples: int) -> None:
    reader = _reader(["My sister Anna is here.", "Our dog named Rex."])

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=_QUIET)
    @given(
        st.lists(_TEXTS | _DRAWN, min_size=1, max_size=4).map(" ".join),
        st.sampled_from([None, "Anna", "Bob Smith"]),
        st.sampled_from(["user", "assistant"]),
    )
    def check(text: str, speaker: str | None, role: str) -> None:
        item = _item(text, speaker, role)
        assert reader.read(item) == _unskipped(reader, item)

    check()


def test_the_reader_reads_what_every_pattern_on_every_sentence_reads() -> None:
    _check_reader(120)


@pytest.mark.slow
def test_the_reader_reads_what_every_pattern_on_every_sentence_reads_thoroughly() -> None:
    _check_reader(3000)


def test_sentences_without_cues_are_not_read_and_cued_ones_are() -> None:
    reader = _reader([])
    item = _item("It rained all day. My sister Anna works at Acme. We moved to Denver!", None, "user")
    claims = {(c.subject, c.predicate, c.object) for c in reader.read(item)}
    assert claims == {("anna", "sister_of", USER_NODE), ("anna", "works_at", "acme"), (USER_NODE, "lives_in", "denver")}
    assert not _Cues.of("It rained all day.")
    assert list(_Cues.of("We moved to Denver!", _Cues(True, False, False, True))) == [False, False, False, False]
