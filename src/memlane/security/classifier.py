"""The offline injection classifier: logistic regression over hashed word and character n-grams, numpy only.

The weights ship in the package (``security/data/injection_model.npz``, written by
``memlane bench injection --train``); nothing is downloaded. A long text is scored whole and in windows of a few
sentences, and its score is the highest of them, so one injected sentence inside a long e-mail or table is not
drowned by the benign text around it.
"""

from __future__ import annotations

import itertools
import json
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from memlane.errors import ConfigError
from memlane.security.obfuscation import Unmasked, unmask

BITS: Final = 18
WINDOW_CHARS: Final = 400
MAX_WINDOWS: Final = 64
MODEL_FILE: Final = "injection_model.npz"
_SPAN_BYTES: Final = 256  # features up to this many bytes are hashed with tables

_WORD: Final = re.compile(r"\w+")
_SPACE: Final = re.compile(r"\s+")
_LINE: Final = re.compile(r"\s*\n\s*")
_BREAK: Final = re.compile(r"(?<=[.!?\n|])\s+")


@lru_cache(maxsize=1)
def _crc_tables() -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """Tables that give zlib's CRC-32 of a message of up to ``_SPAN_BYTES`` bytes as XORs of one entry per byte.

    For a fixed length the CRC is affine in the message bits: ``crc32(m) == START[len(m)] ^ XOR_j
    BYTE[len(m) - 1 - j][m[j]]``, where ``BYTE[k][b]`` is what byte ``b`` contributes with ``k`` bytes after it
    (each zero byte after it is one step of the CRC register) and ``START[n]`` is the CRC of ``n`` zero bytes.
    """
    byte = np.zeros((_SPAN_BYTES, 256), dtype=np.uint32)
    base = zlib.crc32(b"\0")
    byte[0] = [zlib.crc32(bytes((b,))) ^ base for b in range(256)]
    for k in range(1, _SPAN_BYTES):
        byte[k] = (byte[k - 1] >> 8) ^ byte[0][byte[k - 1] & 0xFF]
    start = np.array([zlib.crc32(b"\0" * n) for n in range(_SPAN_BYTES + 1)], dtype=np.uint32)
    return byte, start


def _crc32_spans(
    buf: npt.NDArray[np.uint8], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint32]:
    """``zlib.crc32`` of every ``buf[lo:hi]`` (1 to ``_SPAN_BYTES`` bytes each; spans may overlap)."""
    byte, start = _crc_tables()
    size = hi - lo
    if not size.size:
        return np.zeros(0, dtype=np.uint32)
    longest = int(size.max())
    if int(size.min()) == longest:  # e.g. the 4-grams of plain ASCII text
        crc: npt.NDArray[np.uint32] = start[size]
        for k in range(longest):
            crc ^= byte[k][buf[hi - 1 - k]]
        return crc
    order = np.argsort(-size, kind="stable")  # longest first: the spans still running at step k are a prefix
    ends = hi[order]
    crc = start[size[order]]
    running = np.searchsorted(-size[order], -np.arange(longest), side="left")
    for k in range(longest):
        n = int(running[k])
        crc[:n] ^= byte[k][buf[ends[:n] - 1 - k]]
    out: npt.NDArray[np.uint32] = np.empty_like(crc)
    out[order] = crc
    return out


def _normalised(text: str) -> str:
    return _SPACE.sub(" ", _LINE.sub(" \u00b6 ", text.casefold())).strip()  # a line break is a visible mark


def _tokens(low: str) -> list[str]:
    """The word, word-pair and line-start features of a normalised text, as the strings that are hashed."""
    words = _WORD.findall(low)
    tokens = [f"w {w}" for w in words]
    tokens += [f"b {a} {b}" for a, b in itertools.pairwise(words)]
    # how each line starts: a table row, a header, or a sentence among them
    tokens += [f"l {_WORD.findall(line)[0] if _WORD.search(line) else line[:1]}" for line in low.split("\u00b6")[1:]]
    return tokens


def feature_sets(texts: Sequence[str], bits: int = BITS) -> list[npt.NDArray[np.int64]]:
    """``feature_ids`` of each text, all hashed together over one buffer.

    The features of text ``d`` are ``crc32(token.encode()) & mask`` of its word, word-pair and line-start tokens
    and of every 4 characters ``padded[i:i + 4]`` of `` {normalised text} ``; all of them are CRC'd at once with
    ``_crc32_spans`` over the UTF-8 bytes of every padded text and every token (a token too long for the tables
    goes through ``zlib`` alone).
    """
    mask = (1 << bits) - 1
    padded = [f" {_normalised(t)} " for t in texts]
    token_lists = [_tokens(p[1:-1]) for p in padded]
    tokens = list(itertools.chain.from_iterable(token_lists))
    buf = np.frombuffer(("".join(padded) + "".join(tokens)).encode("utf-8"), dtype=np.uint8)
    # byte offset of every character (UTF-8 continuation bytes are 10xxxxxx), then of the end
    offsets = np.append(np.flatnonzero((buf & 0xC0) != 0x80), buf.size)
    chars = np.array([len(p) for p in padded], dtype=np.int64)
    grams = np.maximum(chars - 3, 0)
    gram_doc = np.repeat(np.arange(len(texts), dtype=np.int64), grams)
    gram_at = np.arange(int(grams.sum()), dtype=np.int64) - np.repeat(np.cumsum(grams) - grams, grams)
    gram_at += (np.cumsum(chars) - chars)[gram_doc]  # each 4-gram's first character in the buffer
    token_chars = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    token_end = int(chars.sum()) + np.cumsum(token_chars)
    counts = np.array([len(t) for t in token_lists], dtype=np.int64)
    token_doc = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    lo = np.concatenate([offsets[gram_at], offsets[token_end - token_chars]])
    hi = np.concatenate([offsets[gram_at + 4], offsets[token_end]])
    doc = np.concatenate([gram_doc, token_doc])
    fits = hi - lo <= _SPAN_BYTES
    crc = np.empty(lo.size, dtype=np.int64)
    crc[fits] = _crc32_spans(buf, lo[fits], hi[fits])
    for i in np.flatnonzero(~fits):  # a very long word (a URL, a run of base64): rare
        crc[i] = zlib.crc32(buf[lo[i] : hi[i]].tobytes())
    keys = (doc << bits) | (crc & mask)
    keys.sort()
    if keys.size:
        keys = keys[np.append(True, keys[1:] != keys[:-1])]
    bounds = np.searchsorted(keys >> bits, np.arange(len(texts) + 1))
    ids = keys & mask
    return [ids[bounds[d] : bounds[d + 1]] for d in range(len(texts))]


def feature_ids(text: str, bits: int = BITS) -> npt.NDArray[np.int64]:
    """The distinct hashed features of ``text`` (already unmasked): words, word pairs, line starts and
    character 4-grams (of the case-folded text with its whitespace collapsed), sorted.
    """
    return feature_sets([text], bits)[0]


def windows(text: str, size: int = WINDOW_CHARS, limit: int = MAX_WINDOWS) -> list[str]:
    """``text`` cut at sentence, line and table-cell ends into pieces of about ``size`` characters (one piece when
    it is short); at most ``limit`` pieces, the rest joined into the last.
    """
    if len(text) <= size:
        return [text]
    out: list[str] = []
    current = ""
    for part in _BREAK.split(text):
        if current and len(current) + len(part) > size:
            out.append(current)
            current = ""
        current = f"{current} {part}" if current else part
        while len(current) > 2 * size:
            out.append(current[:size])
            current = current[size:]
    if current:
        out.append(current)
    if len(out) > limit:
        out = [*out[: limit - 1], " ".join(out[limit - 1 :])]
    return out


def views(text: str) -> Iterator[str]:
    """What the classifier scores of one (unmasked) text: the whole, then its windows when there are several."""
    yield text
    parts = windows(text)
    if len(parts) > 1:
        yield from parts


@dataclass(frozen=True)
class ClassifierModel:
    """Weights of the logistic regression over hashed features, its bias, and the decision threshold."""

    weights: npt.NDArray[np.float32]
    bias: float
    threshold: float
    bits: int
    info: str = ""

    def logit(self, text: str) -> float:
        """The raw score of one view (features are binary, L2-normalised)."""
        return self._logit(feature_ids(text, self.bits))

    def _logit(self, ids: npt.NDArray[np.int64]) -> float:
        if ids.size == 0:
            return self.bias
        return float(self.weights[ids].sum() / np.sqrt(ids.size) + self.bias)

    def probability(self, text: str) -> float:
        """The injection probability of ``text``: the highest over its views, after unmasking."""
        return self.probability_of(unmask(text))

    def probability_of(self, unmasked: Unmasked) -> float:
        """``probability`` of a text already unmasked."""
        return self.probabilities_of([unmasked])[0]

    def probabilities_of(self, texts: Sequence[Unmasked]) -> list[float]:
        """``probability_of`` of each text, their views and payloads featurised together."""
        owner: list[int] = []
        views_of: list[str] = []
        for i, unmasked in enumerate(texts):
            for view in (*views(unmasked.text), *unmasked.payloads):
                owner.append(i)
                views_of.append(view)
        best = [-np.inf] * len(texts)
        for i, ids in zip(owner, feature_sets(views_of, self.bits), strict=True):
            best[i] = max(best[i], self._logit(ids))
        return [float(1.0 / (1.0 + np.exp(-b))) for b in best]

    def save(self, path: Path) -> None:
        """Write the model as a compressed ``.npz`` (weights as float16: the file stays small)."""
        meta = json.dumps({"bias": self.bias, "threshold": self.threshold, "bits": self.bits, "info": self.info})
        with path.open("wb") as fh:
            np.savez_compressed(fh, weights=self.weights.astype(np.float16), meta=np.array(meta))

    @classmethod
    def load(cls, path: Path | None = None) -> ClassifierModel:
        """The model at ``path``, or the one shipped in the package."""
        try:
            if path is None:
                with resources.as_file(resources.files("memlane.security") / "data" / MODEL_FILE) as shipped:
                    return cls._read(shipped)
            return cls._read(path)
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(f"cannot load the injection classifier: {exc}") from exc

    @classmethod
    def _read(cls, path: Path) -> ClassifierModel:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            weights = data["weights"].astype(np.float32)
        bits = int(meta["bits"])
        if weights.shape != (1 << bits,):
            raise ValueError(f"{path.name} holds {weights.shape} weights, expected {1 << bits}")
        return cls(weights, float(meta["bias"]), float(meta["threshold"]), bits, str(meta.get("info", "")))


def probabilities(model: ClassifierModel, texts: Sequence[str]) -> list[float]:
    """``model.probability`` of each text."""
    return [model.probability(t) for t in texts]
