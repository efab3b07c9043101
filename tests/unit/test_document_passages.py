"""Splitting documents into passages: boundaries, window, overlap, and the count of word pieces."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.documents.passages import Span, estimate_pieces, split_passages, token_counter
from memlane.embedding.fake import HashEmbedder


def words(texts: list[str]) -> list[int]:
    """One piece per white-space separated word: easy to reason about in tests."""
    return [len(t.split()) for t in texts]


def sentence(i: int, n: int = 10) -> str:
    return " ".join([f"s{i}"] * (n - 1)) + " end."


def test_a_text_within_the_window_is_one_passage_without_surrounding_blanks() -> None:
    text = "  \n A short note. Two sentences.\n\n"
    assert split_passages(text, words, window=20) == [Span(4, 32)]
    assert text[4:32] == "A short note. Two sentences."


def test_blank_text_has_no_passage() -> None:
    assert split_passages(" \n\t ", words) == []


def test_passages_break_between_sentences_and_never_exceed_the_window() -> None:
    text = " ".join(sentence(i) for i in range(10))  # 100 words, sentences of 10
    spans = split_passages(text, words, window=35, overlap=0)
    assert [len(text[s.start : s.end].split()) for s in spans] == [30, 30, 30, 10]
    assert all(text[s.start : s.end].endswith("end.") for s in spans)
    assert " ".join(text[s.start : s.end] for s in spans) == text  # nothing lost, nothing repeated


def test_a_short_last_sentence_opens_the_next_passage() -> None:
    text = " ".join(sentence(i) for i in range(6))
    spans = split_passages(text, words, window=35, overlap=10)
    pieces = [text[s.start : s.end] for s in spans]
    assert pieces[0].split()[-10:] == pieces[1].split()[:10]  # sentence 2 closes the first and opens the second
    assert all(len(p.split()) <= 35 for p in pieces)
    assert pieces[-1].endswith(sentence(5))


def test_a_new_paragraph_starts_a_passage_once_half_the_window_is_used() -> None:
    first = " ".join(sentence(i) for i in range(2))  # 20 words: more than half of 28
    second = " ".join(sentence(i, 5) for i in range(2, 4))  # its first sentence (5 words) would fit beside it
    text = f"{first}\n\n{second}"
    spans = split_passages(text, words, window=28, overlap=0)
    assert [text[s.start : s.end] for s in spans] == [first, second]


def test_a_sentence_longer_than_the_window_is_cut_between_words() -> None:
    text = " ".join(f"w{i}" for i in range(25)) + "."
    spans = split_passages(text, words, window=10, overlap=0)
    pieces = [text[s.start : s.end] for s in spans]
    assert [len(p.split()) for p in pieces] == [10, 10, 5]
    assert " ".join(pieces) == text


@given(st.lists(st.text(alphabet="ab .\n", min_size=0, max_size=40), max_size=30))
def test_every_word_is_in_some_passage_and_spans_are_ordered(parts: list[str]) -> None:
    text = "".join(parts)
    spans = split_passages(text, words, window=8, overlap=3)
    covered = {i for s in spans for i in range(s.start, s.end)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    assert all(a.start < b.start and a.end <= b.end for a, b in itertools.pairwise(spans))
    assert all(sum(words([text[s.start : s.end]])) <= 8 or len(text[s.start : s.end].split()) == 1 for s in spans)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="window"):
        split_passages("text", words, window=0)


def test_the_estimate_counts_words_signs_and_long_words() -> None:
    assert estimate_pieces(["Hello, world!", "internationalisation"]) == [4, 3]


def test_an_embedder_without_a_tokenizer_gets_the_estimate() -> None:
    assert token_counter(HashEmbedder()) is estimate_pieces
