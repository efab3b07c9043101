"""The hashed features the injection classifier reads: words, word pairs, line starts and character 4-grams of the
case-folded text, each hashed with zlib's CRC-32 into ``bits`` bits, for a whole batch of texts in a few numpy passes.

The features of a text are ``crc32(token.encode()) & mask`` of the tokens ``w WORD`` (each word), ``b WORD WORD``
(each pair of neighbouring words), ``l FIRST`` (how each line after the first starts) and of every 4 characters of
`` {normalised text} ``. No token string is built for the words and pairs: CRC-32 is affine in the bytes of a
message of fixed length, so the CRC of ``w WORD`` or ``b WORD WORD`` comes from table entries for the word bytes
where they already lie in the normalised text (see ``_crc_tables``), which gives zlib's exact values.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

BITS: Final = 18
_SPAN_BYTES: Final = 256  # messages up to this many bytes are hashed with tables; longer ones go through zlib

_PILCROW: Final = "\u00b6"  # a line break, kept as a visible mark
_W, _B, _L, _BLANK = ord("w"), ord("b"), ord("l"), ord(" ")


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
def _latin_gram_tables() -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.int32]]:
    """The CRC-32 of a 4-gram ``a b c d`` of Latin-1 characters (one or two UTF-8 bytes each) in two lookups of
    character pairs: ``HIGH[TAIL[c << 8 | d] | a << 8 | b] ^ LOW[c << 8 | d]``, where ``TAIL`` picks the block of
    ``HIGH`` for the 2, 3 or 4 bytes of ``c d`` after ``a b`` (0 for ASCII ``c d``: ``HIGH[a << 8 | b] ^ LOW[c << 8
    | d]``).
    """
    char, _ = _latin_tables()
    _, start = _crc_tables()
    first = np.arange(1 << 16) >> 8
    second = np.arange(1 << 16) & 0xFF
    w1, w2 = 1 + (first >> 7), 1 + (second >> 7)  # UTF-8 bytes of each character of the pair
    high = np.concatenate([start[w1 + w2 + s] ^ char[w2 + s, first] ^ char[s, second] for s in (2, 3, 4)])
    low: npt.NDArray[np.uint32] = char[w2, first] ^ char[0, second]
    tail: npt.NDArray[np.int32] = ((w1 + w2 - 2) << 16).astype(np.int32)  # int32: half the cache lines of intp
    return high, low, tail


@lru_cache(maxsize=1)
def _word_table() -> npt.NDArray[np.bool_]:
    r"""Whether each ASCII character is a regex word character (``\w``: alphanumeric or ``_``)."""
    return np.array([chr(c).isalnum() or c == ord("_") for c in range(128)], dtype=np.bool_)


def normalised(text: str) -> str:
    """``text`` case-folded, each run of whitespace one space, or `` ¶ `` where it holds a line break; stripped."""
    low = text.casefold()
    if "\n" not in low:  # the same as the two substitutions (``\s`` is ``str.isspace``, as in ``split``)
        return " ".join(low.split())
    if _PILCROW not in low:
        # Each line break its own ``¶`` word among the words of ``split``, then each run of them one: a run of
        # whitespace holding a line break becomes `` ¶ ``, a ``¶`` before (after) the words when one comes before
        # (after) them, and ``¶`` alone when there are no words.
        out = " ".join(low.replace("\n", " \u00b6 ").split())
        while "\u00b6 \u00b6" in out:
            out = out.replace("\u00b6 \u00b6", _PILCROW)
        return out
    # A run of whitespace holding a line break is one `` ¶ `` (then stripped), any other run one space: the lines
    # with words joined by `` ¶ ``, and a ``¶`` before (after) them when a line break comes before (after) them.
    lines = [" ".join(words) for words in map(str.split, low.split("\n")) if words]
    if not lines:
        return _PILCROW
    first, last = low.split(None, 1)[0], low.rsplit(None, 1)[-1]
    head = _PILCROW + " " if "\n" in low[: low.index(first)] else ""
    tail = " " + _PILCROW if "\n" in low[low.rindex(last) + len(last) :] else ""
    return head + f" {_PILCROW} ".join(lines) + tail


@lru_cache(maxsize=1)
def _latin_tables() -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.bool_]]:
    """For each Latin-1 character ``c`` (one byte of ``str.encode("latin-1")``): what its UTF-8 bytes contribute to
    a CRC-32 with ``k`` bytes after them (``CHAR[k][c]``: ``BYTE[k][c]`` for ASCII, ``BYTE[k+1][lead] ^
    BYTE[k][continuation]`` for the rest), and whether it is a word character.

    ``CHAR[_SPAN_BYTES - 1]`` of a two-byte character would need a row the tables lack; it is only read for a token
    longer than ``_SPAN_BYTES`` bytes, which goes through zlib.
    """
    byte, _ = _crc_tables()
    char = byte.copy()
    upper = np.arange(128, 256)
    lead, cont = 0xC0 | (upper >> 6), 0x80 | (upper & 0x3F)
    char[:-1, 128:] = byte[1:][:, lead] ^ byte[:-1][:, cont]
    char[-1, 128:] = byte[-1, lead] ^ byte[-1, cont]
    word = np.array([chr(c).isalnum() or c == ord("_") for c in range(256)], dtype=np.bool_)
    return char, word


@lru_cache(maxsize=1)
def _bmp_word_table() -> npt.NDArray[np.bool_]:
    r"""Whether each code point of the Basic Multilingual Plane is a word character (``\w``)."""
    return np.array([chr(c).isalnum() or c == ord("_") for c in range(0x10000)], dtype=np.bool_)


def _word_chars(points: npt.NDArray[np.uint32] | npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    r"""Whether each code point is a word character, as ``\w`` reads it in a ``str`` pattern."""
    if points.dtype == np.uint8:  # ASCII
        out: npt.NDArray[np.bool_] = _word_table()[points]
        return out
    table = _bmp_word_table()
    if not points.size or int(points.max()) < table.size:
        bmp: npt.NDArray[np.bool_] = table[points]
        return bmp
    astral = points >= table.size
    out = table[np.where(astral, 0, points)]
    where = astral.nonzero()[0]
    distinct, back = np.unique(points[where], return_inverse=True)
    out[where] = np.array([chr(int(c)).isalnum() for c in distinct], dtype=np.bool_)[back]
    return out


def _token_crcs(
    token: Callable[[int], bytes],
    flat: npt.NDArray[np.uint32],
    stride: int,
    value: npt.NDArray[np.intp],
    after: npt.NDArray[np.intp],
    lens: npt.NDArray[np.intp],
    size: npt.NDArray[np.intp],
    pair: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """CRC-32 of ``w WORD`` for each word, and of ``b WORD NEXT`` for each word whose ``pair`` is set (its next
    word is in the same text).

    The words are read in units (characters, by their table column): word ``i`` has ``lens[i]`` units and ``size[i]``
    bytes of UTF-8; ``value`` and ``after`` give, for every unit of every word in order, its table column and the
    bytes after it in its word; ``flat[k * stride + v]`` is what unit ``v`` contributes with ``k`` bytes after it.
    ``token(i)`` is the UTF-8 of word ``i``, for a token longer than the tables (it goes through zlib).

    With ``C_k(W) = XOR_j BYTE[len(W) - 1 - j + k][W[j]]`` (the word's bytes followed by ``k`` more bytes):
    ``crc32("w " W) = START[n] ^ BYTE[n-1][w] ^ BYTE[n-2][ ] ^ C_0(W)`` with ``n = len(W) + 2``, and
    ``crc32("b " A " " B) = START[n] ^ BYTE[n-1][b] ^ BYTE[n-2][ ] ^ C_k(A) ^ BYTE[len(B)][ ] ^ C_0(B)`` with
    ``k = len(B) + 1`` and ``n = len(A) + len(B) + 3``.
    """
    last = _SPAN_BYTES - 1
    first = lens.cumsum() - lens  # each word's first unit in the run of all word units
    shift = np.zeros(size.size, dtype=np.intp)
    np.add(size[1:], 1, out=shift[:-1], where=pair[:-1])
    spread = after + shift.repeat(lens)
    word_head, pair_head, blank = _heads()
    a = pair.nonzero()[0]
    b = a + 1
    longest = 2 * int(size.max())
    if longest + 3 <= _SPAN_BYTES:
        # No token longer than the tables (a pair has at most ``longest + 3`` bytes, ``spread`` at most
        # ``longest``): no clip, no zlib.
        c0 = np.bitwise_xor.reduceat(flat[after * stride + value], first)
        ck = np.bitwise_xor.reduceat(flat[spread * stride + value], first)
        sb = size[b]
        return word_head[size + 2] ^ c0, pair_head[size[a] + sb + 3] ^ ck[a] ^ blank[sb] ^ c0[b]
    if longest < last:
        c0 = np.bitwise_xor.reduceat(flat[after * stride + value], first)
        ck = np.bitwise_xor.reduceat(flat[spread * stride + value], first)
    else:
        c0 = np.bitwise_xor.reduceat(flat[np.minimum(after, last) * stride + value], first)
        ck = np.bitwise_xor.reduceat(flat[np.minimum(spread, last) * stride + value], first)

    top = word_head.size - 1  # any longer token is hashed by zlib below
    n = size + 2
    words = word_head[np.minimum(n, top)] ^ c0
    for i in (n > _SPAN_BYTES).nonzero()[0].tolist():  # a very long word (a URL, a run of base64): rare
        words[i] = zlib.crc32(b"w " + token(i))

    n = size[a] + size[b] + 3
    pairs = pair_head[np.minimum(n, top)] ^ ck[a] ^ blank[np.minimum(size[b], top)] ^ c0[b]
    for j in (n > _SPAN_BYTES).nonzero()[0].tolist():
        pairs[j] = zlib.crc32(b"b " + token(int(a[j])) + b" " + token(int(b[j])))
    return words, pairs


@lru_cache(maxsize=1)
def _heads() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """By a token's length ``n`` in bytes (up to ``_SPAN_BYTES``, one more entry for longer ones): what ``w `` and
    ``b `` at its start add to its CRC (``START[n] ^ BYTE[n-1][w] ^ BYTE[n-2][ ]``), and what a blank with ``n``
    bytes after it adds (``BYTE[n][ ]``).
    """
    byte, start = _crc_tables()
    last = _SPAN_BYTES - 1
    n = np.arange(_SPAN_BYTES + 2)
    lead = start[np.minimum(n, _SPAN_BYTES)] ^ byte[np.clip(n - 2, 0, last), _BLANK]
    word_head = (lead ^ byte[np.clip(n - 1, 0, last), _W]).astype(np.int64)
    pair_head = (lead ^ byte[np.clip(n - 1, 0, last), _B]).astype(np.int64)
    return word_head, pair_head, byte[np.minimum(n, last), _BLANK].astype(np.int64)


def _line_crcs(
    joined: str,
    marks: npt.NDArray[np.intp],
    stop: npt.NDArray[np.intp],
    starts: npt.NDArray[np.intp],
    words: npt.NDArray[np.int64],
    size: npt.NDArray[np.intp],
    token: Callable[[int], bytes],
) -> npt.NDArray[np.int64]:
    """CRC-32 of ``l FIRST`` for the line after each ``¶`` at character ``marks`` of ``joined`` (up to the
    character ``stop`` gives for it): its first word (words start at characters ``starts``, with ``w WORD`` CRCs
    ``words`` and byte ``size``), else its first character, else nothing. ``l WORD`` and ``w WORD`` differ in one
    byte with ``len(WORD) + 1`` bytes after it.
    """
    nxt = starts.searchsorted(marks + 1)
    found = np.concatenate((starts, [stop.max(initial=0) + 1]))[nxt] < stop
    word = nxt[found]
    n = size[word] + 2
    crc = np.empty(marks.size, dtype=np.int64)
    if int(size.max(initial=0)) + 2 <= _SPAN_BYTES:  # no ``l WORD`` longer than the tables
        crc[found] = words[word] ^ _w_to_l()[n - 1]
    else:
        crc[found] = words[word] ^ _w_to_l()[np.minimum(n - 1, _SPAN_BYTES - 1)]
        for j in (n > _SPAN_BYTES).nonzero()[0].tolist():
            crc[found.nonzero()[0][j]] = zlib.crc32(b"l " + token(int(word[j])))
    for j in (~found).nonzero()[0].tolist():  # a line without a word character: rare
        at = int(marks[j]) + 1
        crc[j] = zlib.crc32(f"l {joined[at] if at < stop[j] else ''}".encode())
    return crc


@lru_cache(maxsize=1)
def _w_to_l() -> npt.NDArray[np.int64]:
    """What turns the CRC of ``w WORD`` into that of ``l WORD``, by the bytes after the letter."""
    byte, _ = _crc_tables()
    out: npt.NDArray[np.int64] = (byte[:, _W] ^ byte[:, _L]).astype(np.int64)
    return out


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
    """``feature_ids`` of each text, all hashed together over the padded normalised texts."""
    if not texts:
        return FeatureRuns(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
    padded = [f" {normalised(t)} " for t in texts]
    joined = "".join(padded)
    ends = np.array([len(p) for p in padded]).cumsum()  # each text's end, in characters
    try:
        latin = joined.encode("latin-1")
    except UnicodeEncodeError:
        crcs = _wide_crcs(joined, ends)
    else:
        crcs = _latin_crcs(joined, np.frombuffer(latin, dtype=np.uint8), ends)
    return _runs(crcs, ends, bits)


# The CRCs of one batch: 4-grams (one per character but the last three, at their first), words, pairs (at their
# first word's first character) and line starts (at their mark), each with the character where it lies (its text).
_Crcs = tuple[
    npt.NDArray[np.int64] | npt.NDArray[np.uint32], npt.NDArray[np.int64],
    npt.NDArray[np.int64], npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.intp],
]  # fmt: skip


def _latin_crcs(joined: str, cols: npt.NDArray[np.uint8], ends: npt.NDArray[np.intp]) -> _Crcs:
    """The CRCs of texts whose characters are all Latin-1 (each one byte of ``cols``; ASCII is one UTF-8 byte, the
    rest two): read per character with ``_latin_tables``.
    """
    char, word_table = _latin_tables()
    flat = char.reshape(-1)
    marks = _EMPTY if _PILCROW not in joined else (cols == 0xB6).nonzero()[0]
    width = None
    units = cols.astype(np.intp)  # numpy gathers with native indices: converted once, not in every gather
    high, low, tail = _latin_gram_tables()
    two = (units[:-1] << 8) | units[1:]  # each character with the next, as one index
    if joined.isascii():
        grams = high[two[:-2]] ^ low[two[2:]]
    else:
        grams = high[two[:-2] | tail[two[2:]]] ^ low[two[2:]]
        if not joined.replace(_PILCROW, "").isascii():  # one byte a character but for the marks (in no word)
            width = (units >> 7) + 1  # UTF-8 bytes of each character

    word = word_table[units]
    edges = (word[1:] != word[:-1]).nonzero()[0] + 1  # a padded text starts and ends with a space: pairs of edges
    starts, stops = edges[0::2], edges[1::2]
    lens = stops - starts
    at = word.nonzero()[0]  # every word character, in order
    value = units[at]
    if width is None:
        nbytes = lens
        after = (stops - 1).repeat(lens) - at
    else:
        upto = width.cumsum()  # bytes up to and including each character
        offset = upto - width
        nbytes = offset[stops] - offset[starts]
        after = offset[stops].repeat(lens) - upto[at]

    def token(i: int) -> bytes:
        return joined[starts[i] : stops[i]].encode("utf-8")

    return _tokens(joined, marks, grams, starts, ends, token, flat, value, after, lens, nbytes)


_EMPTY: Final = np.zeros(0, dtype=np.intp)


def _char_grams(
    c: list[npt.NDArray[np.intp]], w: list[npt.NDArray[np.intp]], flat: npt.NDArray[np.uint32], stride: int
) -> npt.NDArray[np.uint32]:
    """CRC-32 of 4-grams whose characters, in order, have the column codes ``c`` and the UTF-8 widths ``w``, from
    ``flat[k * stride + code]``: what a character contributes with ``k`` bytes after it (row 0 is ``flat[code]``).
    """
    _, start = _crc_tables()
    t1 = w[2] + w[3]  # bytes after the second character
    t0 = w[1] + t1
    out: npt.NDArray[np.uint32] = (start[w[0] + t0] ^ flat[t0 * stride + c[0]] ^ flat[t1 * stride + c[1]]) ^ (
        flat[w[3] * stride + c[2]] ^ flat[c[3]]
    )
    return out


def _shifted(a: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    """``a`` as the first, second, third and fourth character of each 4-gram."""
    return [a[:-3], a[1:-2], a[2:-1], a[3:]]


def _wide_crcs(joined: str, ends: npt.NDArray[np.intp]) -> _Crcs:
    """The CRCs of texts with a character beyond Latin-1, read per character as Latin-1 text is: a Latin-1
    character's column is its code, each other distinct character of the batch gets a column after them
    (``_column``).
    """
    points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    codes = points.astype(np.intp)
    beyond = (points > 0xFF).nonzero()[0]
    extra = sorted(set(points[beyond].tolist()))  # the characters beyond Latin-1, in a fixed order
    codes[beyond] = np.array(extra).searchsorted(points[beyond]) + 256
    char, word_table = _latin_tables()
    wide = np.array([len(chr(c).encode("utf-8")) for c in extra], dtype=np.intp)
    width = np.concatenate((1 + (np.arange(256) >> 7), wide))[codes]  # UTF-8 bytes of each character
    word = np.concatenate((word_table, _word_chars(np.array(extra, dtype=np.uint32))))[codes]
    edges = (word[1:] != word[:-1]).nonzero()[0] + 1
    starts, stops = edges[0::2], edges[1::2]
    lens = stops - starts
    at = word.nonzero()[0]  # every word character, in order
    upto = width.cumsum()  # bytes up to and including each character
    offset = upto - width
    nbytes = offset[stops] - offset[starts]
    after = offset[stops].repeat(lens) - upto[at]
    longest = 2 * int(nbytes.max(initial=0))  # the most bytes after a character ``_token_crcs`` reads unclipped
    rows = _SPAN_BYTES if longest >= _SPAN_BYTES - 1 else max(longest + 1, 13)  # a 4-gram reads up to 12
    stride = 256 + len(extra)
    flat = np.concatenate((char[:rows], np.stack([_column(c) for c in extra], axis=1)[:rows]), axis=1).reshape(-1)
    grams = _char_grams(_shifted(codes), _shifted(width), flat, stride)

    def token(i: int) -> bytes:
        return joined[starts[i] : stops[i]].encode("utf-8")

    marks = (points == 0xB6).nonzero()[0]
    return _tokens(joined, marks, grams, starts, ends, token, flat, codes[at], after, lens, nbytes, stride)


@lru_cache(maxsize=4096)
def _column(point: int) -> npt.NDArray[np.uint32]:
    """What the code point beyond Latin-1 contributes to a CRC-32 with ``k`` bytes after it, by ``k``: its UTF-8
    bytes' ``BYTE[k + bytes after it in the character]`` XORed (the row clipped to the tables, as ``_latin_tables``
    does; such a row is only read for a token that goes through zlib).
    """
    byte, _ = _crc_tables()
    data = chr(point).encode("utf-8")
    rows = np.arange(_SPAN_BYTES)
    out = np.zeros(_SPAN_BYTES, dtype=np.uint32)
    for i, b in enumerate(data):
        out ^= byte[np.minimum(rows + len(data) - 1 - i, _SPAN_BYTES - 1), b]
    return out


def _tokens(
    joined: str,
    marks: npt.NDArray[np.intp],
    grams: npt.NDArray[np.uint32] | npt.NDArray[np.int64],
    starts: npt.NDArray[np.intp],
    ends: npt.NDArray[np.intp],
    token: Callable[[int], bytes],
    flat: npt.NDArray[np.uint32],
    value: npt.NDArray[np.uint8] | npt.NDArray[np.intp],
    after: npt.NDArray[np.intp],
    lens: npt.NDArray[np.intp],
    nbytes: npt.NDArray[np.intp],
    stride: int = 256,
) -> _Crcs:
    """The word, pair and line CRCs beside the gram CRCs (see ``_token_crcs`` and ``_line_crcs``)."""
    empty = np.zeros(0, dtype=np.int64)
    pair = np.zeros(starts.size, dtype=np.bool_)
    words = pairs = empty
    if starts.size:
        pair[:-1] = True
        if ends.size > 1:  # a word's next word is in another text when a text's end lies between them
            text = ends.searchsorted(starts, side="right")
            np.equal(text[:-1], text[1:], out=pair[:-1])
        words, pairs = _token_crcs(token, flat, stride, value.astype(np.intp, copy=False), after, lens, nbytes, pair)
    lines = empty
    if marks.size:
        # a line runs to the next mark or to its text's end (the padding space before it)
        stop = np.concatenate((marks[1:], [ends[-1] - 1]))
        if ends.size > 1:
            stop = np.minimum(stop, ends[ends.searchsorted(marks, side="right")] - 1)
        lines = _line_crcs(joined, marks, stop, starts, words, nbytes, token)
    return grams, words, pairs, starts, starts[pair], lines, marks


_INT32_MAX: Final = (1 << 31) - 1


def _runs(crcs: _Crcs, ends: npt.NDArray[np.intp], bits: int) -> FeatureRuns:
    """The sorted distinct features of each text from the CRCs of a batch (a gram crossing two texts dropped)."""
    grams, words, pairs, word_at, pair_at, lines, line_at = crcs
    mask = (1 << bits) - 1
    tokens = np.concatenate([words, pairs, lines])
    # keys as int32 when they fit: they sort faster
    kind: type[np.int32] | type[np.int64] = np.int32 if ends.size << bits <= _INT32_MAX else np.int64
    keys: npt.NDArray[np.signedinteger[Any]]
    if ends.size == 1:
        keys = np.concatenate([grams & mask, tokens & mask], dtype=kind, casting="unsafe")
    else:
        sizes = ends.copy()
        sizes[1:] -= ends[:-1]
        texts: npt.NDArray[np.signedinteger[Any]] = np.arange(ends.size, dtype=kind)
        doc_of = (texts << bits).repeat(sizes)  # each character's text, shifted
        first = doc_of[:-3]  # the text of each gram's first and last character
        gram_keys: npt.NDArray[np.signedinteger[Any]] = (
            grams.view(np.int32) & mask if kind is np.int32 else (grams & mask).astype(kind)
        )
        gram_keys |= first
        gram_keys = gram_keys[first == doc_of[3:]]
        at = np.concatenate([word_at, pair_at, line_at])
        keys = np.concatenate([gram_keys, doc_of[at] | (tokens & mask).astype(kind)])
    keys.sort()
    if keys.size:
        keep = np.empty(keys.size, dtype=np.bool_)
        keep[0] = True
        np.not_equal(keys[1:], keys[:-1], out=keep[1:])
        keys = keys[keep]
    if ends.size == 1:
        return FeatureRuns(keys.astype(np.int64), np.array([0, keys.size], dtype=np.int64))
    bounds = (keys >> bits).searchsorted(np.arange(ends.size + 1)).astype(np.int64)
    return FeatureRuns((keys & mask).astype(np.int64), bounds)


def feature_ids(text: str, bits: int = BITS) -> npt.NDArray[np.int64]:
    """The distinct hashed features of ``text`` (already unmasked): words, word pairs, line starts and
    character 4-grams (of the case-folded text with its whitespace collapsed), sorted.
    """
    return feature_sets([text], bits)[0]
