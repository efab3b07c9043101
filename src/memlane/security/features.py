"""The hashed features the injection classifier reads: words, word pairs, line starts and character 4-grams of the
case-folded text, each hashed with zlib's CRC-32 into ``bits`` bits, for a whole batch of texts in a few numpy passes.

The features of a text are ``crc32(token.encode()) & mask`` of the tokens ``w WORD`` (each word), ``b WORD WORD``
(each pair of neighbouring words), ``l FIRST`` (how each line after the first starts) and of every 4 characters of
`` {normalised text} ``. No token string is built for the words and pairs: CRC-32 is affine in the bytes of a
message of fixed length, so the CRC of ``w WORD`` or ``b WORD WORD`` comes from table entries for the word bytes
where they already lie in the normalised text (see ``_crc_tables``), which gives zlib's exact values.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

BITS: Final = 18
_SPAN_BYTES: Final = 256  # messages up to this many bytes are hashed with tables; longer ones go through zlib

_WORD: Final = re.compile(r"\w+")
_PILCROW: Final = "\u00b6"  # a line break, kept as a visible mark
_W, _B, _BLANK = ord("w"), ord("b"), ord(" ")


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


@lru_cache(maxsize=1)
def _word_table() -> npt.NDArray[np.bool_]:
    r"""Whether each ASCII character is a regex word character (``\w``: alphanumeric or ``_``)."""
    return np.array([chr(c).isalnum() or c == ord("_") for c in range(128)], dtype=np.bool_)


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


def normalised(text: str) -> str:
    """``text`` case-folded, each run of whitespace one space, or `` ¶ `` where it holds a line break; stripped."""
    low = text.casefold()
    if "\n" not in low:  # the same as the two substitutions (``\s`` is ``str.isspace``, as in ``split``)
        return " ".join(low.split())
    # A run of whitespace holding a line break is one `` ¶ `` (then stripped), any other run one space: the lines
    # with words joined by `` ¶ ``, and a ``¶`` before (after) them when a line break comes before (after) them.
    lines = [" ".join(words) for words in map(str.split, low.split("\n")) if words]
    if not lines:
        return _PILCROW
    first, last = low.split(None, 1)[0], low.rsplit(None, 1)[-1]
    head = _PILCROW + " " if "\n" in low[: low.index(first)] else ""
    tail = " " + _PILCROW if "\n" in low[low.rindex(last) + len(last) :] else ""
    return head + f" {_PILCROW} ".join(lines) + tail


def _word_chars(points: npt.NDArray[np.uint32] | npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    r"""Whether each code point is a word character, as ``\w`` reads it in a ``str`` pattern."""
    table = _word_table()
    if points.dtype == np.uint8:  # ASCII
        out: npt.NDArray[np.bool_] = table[points]
        return out
    wide = points >= 128
    out = table[np.where(wide, 0, points)]
    if wide.any():
        where = np.flatnonzero(wide)
        distinct, back = np.unique(points[where], return_inverse=True)
        word = np.array([chr(int(c)).isalnum() for c in distinct], dtype=np.bool_)
        out[where] = word[back]
    return out


def _line_tokens(low: str) -> list[str]:
    """How each line after the first starts (its first word, else its first character), as hashed tokens."""
    out = []
    for line in low.split(_PILCROW)[1:]:
        first = _WORD.search(line)
        out.append(f"l {first.group() if first else line[:1]}")
    return out


def _gram_crcs(
    buf: npt.NDArray[np.uint8], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64] | None
) -> npt.NDArray[np.int64]:
    """CRC-32 of each 4-character gram ``buf[lo:hi]``: 4 bytes of ASCII (``hi`` is ``None`` when all are), up to 16
    bytes otherwise.
    """
    byte, start = _crc_tables()
    every = start[4] ^ byte[3][buf[:-3]] ^ byte[2][buf[1:-2]] ^ byte[1][buf[2:-1]] ^ byte[0][buf[3:]]  # at each byte
    crc: npt.NDArray[np.int64] = every[lo].astype(np.int64)
    if hi is not None:
        wide = np.flatnonzero(hi - lo != 4)
        if wide.size:
            crc[wide] = _crc32_spans(buf, lo[wide], hi[wide])
    return crc


def _token_crcs(
    raw: bytes,
    buf: npt.NDArray[np.uint8],
    lo: npt.NDArray[np.int64],
    hi: npt.NDArray[np.int64],
    pair: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """CRC-32 of ``w WORD`` for each word at bytes ``lo:hi`` of ``buf``, and of ``b WORD NEXT`` for each word whose
    ``pair`` is set (its next word is in the same text).

    With ``C_k(W) = XOR_j BYTE[len(W) - 1 - j + k][W[j]]`` (the word's bytes followed by ``k`` more bytes):
    ``crc32("w " W) = START[n] ^ BYTE[n-1][w] ^ BYTE[n-2][ ] ^ C_0(W)`` with ``n = len(W) + 2``, and
    ``crc32("b " A " " B) = START[n] ^ BYTE[n-1][b] ^ BYTE[n-2][ ] ^ C_k(A) ^ BYTE[len(B)][ ] ^ C_0(B)`` with
    ``k = len(B) + 1`` and ``n = len(A) + len(B) + 3``. A token longer than the tables goes through zlib.
    """
    if not lo.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    byte, start = _crc_tables()
    flat = byte.reshape(-1)
    last = _SPAN_BYTES - 1
    size = hi - lo
    first = np.cumsum(size) - size  # each word's first byte in the run of all word bytes
    total = int(size.sum())
    at = np.arange(total, dtype=np.int64) + np.repeat(lo - first, size)  # every word byte, in buf
    after = np.repeat(hi - 1, size) - at  # bytes after it in its word
    value = buf[at].astype(np.int64)
    c0 = np.bitwise_xor.reduceat(flat[np.minimum(after, last) * 256 + value], first)
    shift = np.zeros(size.size, dtype=np.int64)
    shift[:-1] = size[1:] + 1
    shift = np.repeat(np.where(pair, shift, 0), size)
    ck = np.bitwise_xor.reduceat(flat[np.minimum(after + shift, last) * 256 + value], first)

    n = size + 2
    words = (
        start[np.minimum(n, _SPAN_BYTES)] ^ byte[np.minimum(n - 1, last), _W] ^ byte[np.minimum(n - 2, last), _BLANK]
    ).astype(np.int64)
    words ^= c0
    for i in np.flatnonzero(n > _SPAN_BYTES):  # a very long word (a URL, a run of base64): rare
        words[i] = zlib.crc32(b"w " + raw[lo[i] : hi[i]])

    a = np.flatnonzero(pair)
    b = a + 1
    n = size[a] + size[b] + 3
    pairs = (
        start[np.minimum(n, _SPAN_BYTES)] ^ byte[np.minimum(n - 1, last), _B] ^ byte[np.minimum(n - 2, last), _BLANK]
    ).astype(np.int64)
    pairs ^= ck[a] ^ byte[np.minimum(size[b], last), _BLANK] ^ c0[b]
    for j in np.flatnonzero(n > _SPAN_BYTES):
        x, y = int(a[j]), int(b[j])
        pairs[j] = zlib.crc32(b"b " + raw[lo[x] : hi[x]] + b" " + raw[lo[y] : hi[y]])
    return words, pairs


@dataclass(frozen=True)
class FeatureRuns:
    """The features of a batch of texts: text ``d``'s sorted distinct ids are ``ids[bounds[d]:bounds[d + 1]]``."""

    ids: npt.NDArray[np.int64]
    bounds: npt.NDArray[np.int64]

    def split(self) -> list[npt.NDArray[np.int64]]:
        """The ids of each text."""
        b = self.bounds.tolist()
        return [self.ids[b[d] : b[d + 1]] for d in range(len(b) - 1)]


def feature_sets(texts: Sequence[str], bits: int = BITS) -> list[npt.NDArray[np.int64]]:
    """``feature_ids`` of each text."""
    return feature_runs(texts, bits).split()


def feature_runs(texts: Sequence[str], bits: int = BITS) -> FeatureRuns:
    """``feature_ids`` of each text, all hashed together over the UTF-8 bytes of the padded normalised texts."""
    if not texts:
        return FeatureRuns(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
    mask = (1 << bits) - 1
    padded = [f" {normalised(t)} " for t in texts]
    joined = "".join(padded)
    raw = joined.encode("utf-8")
    buf = np.frombuffer(raw, dtype=np.uint8)
    chars = np.fromiter(map(len, padded), dtype=np.int64, count=len(padded))
    ends = np.cumsum(chars)  # each text's end, in characters
    size = int(ends[-1])
    if len(raw) == size:  # ASCII: a character is a byte
        points: npt.NDArray[np.uint32] | npt.NDArray[np.uint8] = buf
        offsets: npt.NDArray[np.int64] | None = None
    else:
        points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        # byte offset of each character (UTF-8 continuation bytes are 10xxxxxx), then of the end
        offsets = np.append(np.flatnonzero((buf & 0xC0) != 0x80), buf.size)

    # 4-grams: every 4 characters that lie inside one padded text
    grams = max(size - 3, 0)
    doc_of = np.repeat(np.arange(len(texts), dtype=np.int64), chars)
    inside = np.ones(grams, dtype=np.bool_)
    for back in (1, 2, 3):
        cut = ends - back
        inside[cut[(cut >= 0) & (cut < grams)]] = False
    gram_at = np.flatnonzero(inside)
    if offsets is None:
        gram_crc = _gram_crcs(buf, gram_at, None)
    else:
        gram_crc = _gram_crcs(buf, offsets[gram_at], offsets[gram_at + 4])
    gram_doc = doc_of[gram_at]

    # words: maximal runs of word characters (a padded text starts and ends with a space, so no run crosses two)
    word = _word_chars(points).view(np.int8)
    edge = np.diff(word)
    w_start = np.flatnonzero(edge == 1) + 1
    w_end = np.flatnonzero(edge == -1) + 1
    w_doc = doc_of[w_start]
    pair = np.zeros(w_doc.size, dtype=np.bool_)
    pair[:-1] = w_doc[1:] == w_doc[:-1]
    lo, hi = (w_start, w_end) if offsets is None else (offsets[w_start], offsets[w_end])
    word_crc, pair_crc = _token_crcs(raw, buf, lo, hi, pair)

    line_crc: list[int] = []
    line_doc: list[int] = []
    if _PILCROW in joined:
        for d, p in enumerate(padded):
            if _PILCROW in p:
                tokens = _line_tokens(p[1:-1])
                line_crc += [zlib.crc32(t.encode("utf-8")) for t in tokens]
                line_doc += [d] * len(tokens)

    crc = np.concatenate([gram_crc, word_crc, pair_crc, np.array(line_crc, dtype=np.int64)])
    doc = np.concatenate([gram_doc, w_doc, w_doc[pair], np.array(line_doc, dtype=np.int64)])
    keys = (doc << bits) | (crc & mask)
    if len(texts) << bits <= np.iinfo(np.int32).max:
        keys = keys.astype(np.int32)  # sorts faster
    keys.sort()
    if keys.size:
        keys = keys[np.append(True, keys[1:] != keys[:-1])]
    bounds = np.searchsorted(keys >> bits, np.arange(len(texts) + 1)).astype(np.int64)
    return FeatureRuns((keys & mask).astype(np.int64), bounds)


def feature_ids(text: str, bits: int = BITS) -> npt.NDArray[np.int64]:
    """The distinct hashed features of ``text`` (already unmasked): words, word pairs, line starts and
    character 4-grams (of the case-folded text with its whitespace collapsed), sorted.
    """
    return feature_sets([text], bits)[0]
