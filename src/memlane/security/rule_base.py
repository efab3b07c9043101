"""The building blocks of the injection rules: a named, weighted pattern (``Rule``), a match (``RuleMatch``), and
helpers to write them (``rx``, ``cues``, ``needs``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Rule:
    """A named pattern and how much its match says (1.0: enough to flag alone).

    ``cues``, ``marks`` and ``needs`` let a text skip the pattern: every match holds one of the ``cues`` as a
    whole word of the text's ``skeleton`` (its ASCII spelling, lower case) or one of the ``marks`` characters (a
    rule with neither always runs), and one of the ``needs`` anywhere in the skeleton (a rule without them needs
    nothing more). Rules of one ``family`` (two
    readings of the same sign) count once, at the weight of the strongest that matched.
    """

    name: str
    pattern: re.Pattern[str]
    weight: float
    cues: frozenset[str] = frozenset()
    marks: str = ""
    needs: tuple[str, ...] = ()
    family: str = ""


@dataclass(frozen=True)
class RuleMatch:
    """A rule that matched, where (``payload`` when inside decoded base64/hex), its weight and its family."""

    name: str
    weight: float
    payload: bool = False
    family: str = ""

    @property
    def group(self) -> str:
        """What this match counts under: its family, or its own name."""
        return self.family or self.name


def rx(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled case-insensitive, ``^`` and ``$`` at every line."""
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


def cues(words: str) -> frozenset[str]:
    """The space-separated ``words`` as a rule's cue set."""
    return frozenset(words.split())


def needs(texts: str, *more: str) -> tuple[str, ...]:
    """The ``|``-separated ``texts`` (and ``more``) as a rule's needs."""
    return (*texts.split("|"), *more)


# Any ASCII letter, as a literal matched case-insensitively: which non-ASCII characters the rules' ASCII letters
# match ("K" Kelvin sign, "ſ" long s, "ı" dotless i, "İ").
_ASCII_LETTER: Final = re.compile("|".join("abcdefghijklmnopqrstuvwxyz"), re.IGNORECASE)


_FOLD_KEPT: Final = 1 << 16  # characters whose fold is kept: a text of every code point cannot grow it further


class _Fold(dict[int, str]):
    """``str.translate`` table of ``skeleton``, filled as characters are met (up to ``_FOLD_KEPT`` of them)."""

    def __missing__(self, point: int) -> str:
        ch = chr(point)
        if ch.isascii():
            out = ch.lower()
        elif ch.isspace():
            out = " "
        elif not (ch.isalnum() or ch == "_"):
            out = ch  # not a word character: stays one, so words split where ``\w+`` splits them
        elif _ASCII_LETTER.fullmatch(ch):
            out = next(a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(a, ch, re.IGNORECASE))
        else:
            bare = "".join(
                c for c in unicodedata.normalize("NFKD", ch.casefold()) if not unicodedata.combining(c)
            ).lower()
            # "é" -> "e", "ß" -> "ss", "ﬁ" -> "fi"; a word character without an ASCII spelling stays a word character
            out = bare if bare and bare.isascii() and all(c.isalnum() for c in bare) else "_"
        if len(self) < _FOLD_KEPT:
            self[point] = out
        return out


_FOLD: Final = _Fold()


def skeleton(text: str) -> str:
    """``text`` in lower-case ASCII as far as the rules' cues and needs read it: each ASCII letter lower case,
    each word character its ASCII spelling ("é" -> "e", "ß" -> "ss", "K" -> "k") or ``_`` when it has none, each
    whitespace character a space, any other character itself. A word of ``text`` that a pattern's ASCII letters
    (or their accented forms) match reads as that word here, and words split where they split in ``text``.
    """
    return text.lower() if text.isascii() else text.translate(_FOLD)


def lowered(pattern: re.Pattern[str]) -> re.Pattern[str]:
    r"""``pattern`` for lower-case ASCII text: its letters in lower case (not an escape's: ``\S`` stays), compiled
    without case folding. On ``text.lower()`` of an ASCII ``text`` it finds a match exactly when ``pattern`` finds
    one in ``text``, and faster: without case folding ``re`` skips ahead on the first characters a match can have.
    """
    source, out, i = pattern.pattern, [], 0
    while i < len(source):
        if source[i] == "\\":
            out.append(source[i : i + 2])
            i += 2
        else:
            out.append(source[i].lower())
            i += 1
    return re.compile("".join(out), pattern.flags & ~re.IGNORECASE)
