"""The injection classifier's features as first written, for tests that check its fast paths against them."""

from __future__ import annotations

import itertools
import re
import zlib

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")
_LINE = re.compile(r"\s*\n\s*")


def slow_normalised(text: str) -> str:
    """The text casefolded, each line break with the spaces around it one pilcrow, other spaces one space."""
    return _SPACE.sub(" ", _LINE.sub(" \u00b6 ", text.casefold())).strip()


def reference_ids(text: str, bits: int = 18) -> npt.NDArray[np.int64]:
    """The feature ids: every token string (words, word pairs, line heads, 4-grams) built and hashed with zlib one by
    one.
    """
    low = slow_normalised(text)
    words = _WORD.findall(low)
    tokens = [f"w {w}" for w in words]
    tokens += [f"b {a} {b}" for a, b in itertools.pairwise(words)]
    tokens += [f"l {_WORD.findall(line)[0] if _WORD.search(line) else line[:1]}" for line in low.split("\u00b6")[1:]]
    padded = f" {low} "
    tokens += [padded[i : i + 4] for i in range(len(padded) - 3)]
    mask = (1 << bits) - 1
    return np.unique(np.array([zlib.crc32(t.encode("utf-8")) & mask for t in tokens], dtype=np.int64))
