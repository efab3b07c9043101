"""``HashEmbedder``: a deterministic bag-of-hashed-words test double. Fast and dependency-free, NOT for quality."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from memlane.embedding.base import Vectors
from memlane.errors import ConfigError, EmbeddingError

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The normalised word tokens of ``text``: NFKC, case-folded, possessive ``'s`` and plural ``s`` stripped."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    text = re.sub(r"'s\b", "", text)
    out = []
    for word in _WORD.findall(text):
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


@lru_cache(maxsize=65_536)
def _bucket(word: str, dim: int) -> tuple[int, float]:
    """Stable (across processes, unlike ``hash``) column and sign of a word."""
    digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, 1.0 if (value >> 63) & 1 else -1.0


class HashEmbedder:
    """A test double: each word adds ±1 to a hashed column, then the row is L2-normalised.

    Texts sharing words score high, texts sharing none score near zero; there is no semantics at all
    ("dog" and "puppy" are unrelated). Deterministic across processes and platforms. A text without
    any word maps to a fixed unit vector. Use it in tests and demos, never for real retrieval.
    """

    def __init__(self, dim: int = 64) -> None:
        if not isinstance(dim, int) or dim < 2:
            raise ConfigError(f"HashEmbedder dim must be an integer >= 2, got {dim!r}")
        self._dim = dim

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self._dim})"

    @property
    def identity(self) -> str:
        return f"hash-test-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: an ``(len(texts), dim)`` float32 array of unit rows."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise EmbeddingError(f"embed() takes strings, got {type(text).__name__}")
            for word in words(text):
                col, sign = _bucket(word, self._dim)
                out[row, col] += sign
        norms = np.linalg.norm(out, axis=1)
        empty = norms == 0
        out[empty, 0] = 1.0
        norms[empty] = 1.0
        unit: Vectors = out / norms[:, None]
        return unit

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query: a ``(dim,)`` float32 unit vector."""
        vector: Vectors = self.embed([text])[0]
        return vector
