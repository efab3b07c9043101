"""Undo the tricks that hide an injection from a scanner: invisible characters, look-alike letters, spaced-out
words, and base64 or hex payloads; say which tricks were found.

The detectors scan ``Unmasked.text`` (the folded form) and each decoded payload, so an instruction written
``іgnоrе`` with Cyrillic letters, ``i g n o r e``, ``ig\u200bnore`` or base64-encoded reads as plain ``ignore``.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

# Zero-width and invisible formatting characters (word joiners, BOM, soft hyphen, tag characters' block start).
_INVISIBLE: Final = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
_TAGS: Final = re.compile("[\U000e0000-\U000e007f]")  # Unicode tag characters: invisible ASCII look-alikes

# Letters of other scripts that look like Latin ones (the common subset of Unicode's confusables list).
_HOMOGLYPHS: Final[dict[int, str]] = {
    ord(k): v
    for k, v in {
        "а": "a", "в": "b", "с": "c", "е": "e", "ё": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "м": "m",
        "н": "h", "о": "o", "р": "p", "ѕ": "s", "т": "t", "у": "y", "х": "x", "ԁ": "d", "ԛ": "q", "ԝ": "w",
        "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
        "χ": "x", "ɡ": "g", "ɪ": "i", "ʏ": "y", "ᴀ": "a", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ᴏ": "o", "ᴜ": "u",
        "Α": "A", "Β": "B", "Ε": "E", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P",
        "Τ": "T", "Χ": "X", "Υ": "Y", "Ζ": "Z", "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I",
        "К": "K", "М": "M", "О": "O", "Р": "P", "Т": "T", "Х": "X", "Ѕ": "S", "Ј": "J",
    }.items()
}  # fmt: skip
_ANY_HOMOGLYPH: Final = re.compile("[" + "".join(map(chr, _HOMOGLYPHS)) + "]")
_LATIN_WORD: Final = re.compile(r"[A-Za-z]")
_WORD: Final = re.compile(r"\w+")
# Five or more single letters separated by one space, dot, dash, underscore or asterisk: "i g n o r e".
_SPACED: Final = re.compile(r"(?<!\w)(?:[^\W\d_][ .\-_*]){4,}[^\W\d_](?!\w)")
_BASE64: Final = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX: Final = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]?){12,}(?![0-9A-Fa-f])")
_ESCAPED: Final = re.compile(r"(?:\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|&#x?[0-9A-Fa-f]{2,5};){6,}")
MAX_PAYLOADS: Final = 8


def _classes(**members: str) -> bytes:
    """A ``bytes.translate`` table mapping each ASCII character of ``members[mark]`` to ``mark``, others to ``~``."""
    table = bytearray(b"~" * 256)
    for mark, chars in members.items():
        for ch in chars:
            table[ord(ch)] = ord(mark)
    return bytes(table)


# Necessary conditions for a match in ASCII text, read off each pattern and checked with one translation and one
# substring search (much cheaper than the pattern): a spaced-out word is at least five letters each followed by a
# separator but the last; a base64 token at least 20 characters of its alphabet in a row; a hex run at least 24
# characters that are hex digits, spaces or colons in a row.
_LETTERS: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SPACED_HINT: Final = (_classes(L=_LETTERS, S=" .-_*"), b"LSLSLSLSL")
# For text beyond ASCII, read as ``encode("ascii", "replace")``: each other character one ``?``, which may be a
# letter (the hints then ask no more of it than the patterns do: base64 and hex runs are ASCII).
_SPACED_WIDE_HINT: Final = (_classes(L=_LETTERS + "?", S=" .-_*"), b"LSLSLSLSL")
_BASE64_HINT: Final = (_classes(B=_LETTERS + "0123456789+/_-"), b"B" * 20)
_HEX_HINT: Final = (_classes(H="0123456789abcdefABCDEF :"), b"H" * 24)


@dataclass(frozen=True)
class Unmasked:
    """A text with its hiding tricks undone: the folded ``text``, the ``tricks`` found, ``payloads`` decoded."""

    text: str
    tricks: tuple[str, ...] = ()
    payloads: tuple[str, ...] = ()


def _printable_share(text: str) -> float:
    if not text:
        return 0.0
    good = sum(1 for ch in text if ch.isprintable() or ch in "\n\t")
    letters = sum(1 for ch in text if ch.isalpha() or ch == " ")
    return min(good, letters * 1.25) / len(text)


def _decoded(raw: bytes) -> str | None:
    """``raw`` as text when it reads as words (mostly letters and spaces), else ``None``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if len(text) >= 8 and " " in text and _printable_share(text) > 0.85 else None


def _base64(token: str) -> str | None:
    body = token.rstrip("=")
    if len(body) % 4 == 1 or body.isalpha() or body.isdigit():
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        alt = b"-_" if ("-" in body or "_" in body) else None
        raw = base64.b64decode(padded, altchars=alt, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _decoded(raw)


def _hex(token: str) -> str | None:
    try:
        return _decoded(bytes.fromhex(re.sub(r"[ :]", "", token)))
    except ValueError:
        return None


def _unescape(token: str) -> str | None:
    out = re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), token)
    out = re.sub(r"\\u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), out)
    out = re.sub(r"&#x([0-9A-Fa-f]+);", lambda m: chr(int(m.group(1), 16)), out)
    out = re.sub(r"&#([0-9]+);", lambda m: chr(int(m.group(1))), out)
    return out if out != token and " " in out else None


def _folder(text: str) -> Callable[[re.Match[str]], str]:
    """A replacer folding look-alike letters in a word that mixes them with Latin ones, or, when most of ``text``'s
    letters are Latin, in any word that becomes pure ASCII (a Russian or Greek text keeps its own words).
    """
    letters = [ch for ch in text if ch.isalpha()]
    latin_text = bool(letters) and sum(ch.isascii() for ch in letters) > len(letters) / 2

    def fold(match: re.Match[str]) -> str:
        word = match.group()
        folded = word.translate(_HOMOGLYPHS)
        if folded == word:
            return word
        mixed = bool(_LATIN_WORD.search(word))
        return folded if mixed or (latin_text and folded.isascii()) else word

    return fold


def _unhide(text: str, tricks: list[str]) -> str:
    """``text`` in NFKC with tag characters read, invisible characters dropped and look-alikes folded; the tricks
    found are appended to ``tricks``.
    """
    out = unicodedata.normalize("NFKC", text)
    if out != text and any(unicodedata.category(ch) in ("Lu", "Ll") for ch in set(text) - set(out)):
        tricks.append("compatibility_letters")
    if _TAGS.search(out):
        tricks.append("tag_characters")
        out = _TAGS.sub(lambda m: chr(ord(m.group()) - 0xE0000) if 0x20 <= ord(m.group()) - 0xE0000 < 0x7F else "", out)
    stripped = _INVISIBLE.sub("", out)
    if stripped != out:
        tricks.append("invisible_characters")
        out = stripped
    if _ANY_HOMOGLYPH.search(out):  # only then can a word fold (each maps to another character)
        folded = _WORD.sub(_folder(out), out)
        if folded != out:
            tricks.append("homoglyphs")
            out = folded
    return out


def unmask(text: str) -> Unmasked:
    """``text`` in the form the detectors read (NFKC, invisible characters dropped, look-alikes folded to Latin,
    spaced-out words joined), the tricks that were undone, and the payloads decoded from base64, hex or escapes.

    A word is folded only when it mixes scripts, or becomes pure ASCII inside mostly Latin text, so Russian or Greek
    text stays itself.
    """
    tricks: list[str] = []
    # Plain ASCII has no compatibility forms, tag, invisible or look-alike characters: those steps are skipped.
    out = text if text.isascii() else _unhide(text, tricks)
    plain = out.encode("ascii", "replace")  # a character beyond ASCII one "?" (no base64, hex or separator)
    spaced = _SPACED_HINT if out.isascii() else _SPACED_WIDE_HINT
    if spaced[1] in plain.translate(spaced[0]):
        joined = _SPACED.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group()), out)
        if joined != out:
            tricks.append("spaced_letters")
            out = joined
            plain = out.encode("ascii", "replace")
    payloads: list[str] = []
    scans = (  # the hints inline (this runs for every text written)
        (_BASE64, _base64, "base64", _BASE64_HINT[1] in plain.translate(_BASE64_HINT[0])),
        (_HEX, _hex, "hex", _HEX_HINT[1] in plain.translate(_HEX_HINT[0])),
        (_ESCAPED, _unescape, "escapes", "\\" in out or "&#" in out),  # every escape sequence holds one of them
    )
    for pattern, decode, name, may in scans:
        if not may:
            continue
        for m in pattern.finditer(out):
            if len(payloads) >= MAX_PAYLOADS:
                break
            decoded = decode(m.group())
            if decoded is not None:
                payloads.append(unicodedata.normalize("NFKC", decoded))
                if name not in tricks:
                    tricks.append(name)
    return Unmasked(out, tuple(tricks), tuple(payloads))
