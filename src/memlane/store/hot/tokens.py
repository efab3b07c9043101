"""Words to index terms, as SQLite's FTS5 ``porter unicode61 remove_diacritics 2`` tokenizer makes them.

Runs of letters and digits (the underscore separates, as in unicode61), lower-cased, diacritics removed, then
stemmed by the original Porter algorithm (PyStemmer's ``porter``; words under three characters are kept as they are,
as FTS5's porter does). On LoCoMo's 3,147 distinct indexed terms this differs from FTS5 in 7 (stems of a few words
such as "psychology", and emoji, which unicode61 keeps as characters).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final

import Stemmer

_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)
_STEMMER: Final = Stemmer.Stemmer("porter")
_STEMMER.maxCacheSize = 50_000


def _plain(text: str) -> str:
    text = text.lower()
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


class _Stems(dict[str, str]):
    """Word -> term, filled on first sight; looked up in C by ``map`` (a vocabulary is small, words repeat a lot)."""

    def __missing__(self, word: str) -> str:
        term = word if len(word) < 3 else _STEMMER.stemWord(word)
        if len(self) < 200_000:  # bounded: rare words past that are stemmed each time
            self[word] = term
        return term


_STEMS: Final = _Stems()


def stem(word: str) -> str:
    """The index term of one lower-cased, diacritic-free word."""
    return _STEMS[word]


def tokens(text: str) -> list[str]:
    """Every index term of ``text`` in order (repeats kept: they are the term frequencies)."""
    return list(map(_STEMS.__getitem__, _WORD.findall(_plain(text))))


def query_tokens(terms: Iterable[str]) -> list[str]:
    """The distinct index terms of a query's terms (a term of several words counts each of its words)."""
    return list(dict.fromkeys(t for term in terms for t in tokens(term)))
