"""The building blocks of the injection rules: a named, weighted pattern (``Rule``), a match (``RuleMatch``), and
helpers to write them (``rx``, ``cues``, ``needs``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any, Final


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
    if text.isascii():
        return text.lower()
    # the ASCII runs lowered, only the others read character by character through the table (the same per
    # character: ``_FOLD`` lowers an ASCII character)
    pieces = _NOT_ASCII_RUN.split(text)
    pieces[0::2] = [piece.lower() for piece in pieces[0::2]]
    pieces[1::2] = [piece.translate(_FOLD) for piece in pieces[1::2]]
    return "".join(pieces)


_NOT_ASCII_RUN: Final = re.compile(r"([^\x00-\x7f]+)")


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


def _load_parser() -> tuple[Any, Any] | None:
    """Python's own regex parser and its opcodes, which ``starts`` reads patterns with; ``None`` when this Python
    lacks them (they are private modules: a later release may move or change them, and then every rule runs
    without start literals, as slower but the same).
    """
    try:
        import re._constants as constants  # type: ignore[import-not-found]
        import re._parser as parser  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - a Python without them
        return None
    return parser, constants


_PARSER: Any = _load_parser()
_C: Any = _PARSER[1] if _PARSER is not None else None  # the parse tree's opcodes, read by ``_prefixes``

_MAX_STARTS: Final = 256  # literals in a rule's start pattern; a pattern with more runs without one
_START_CHARS: Final = 12  # how far into a match its start literals are read


def _prefixes(items: list[Any], budget: int = _START_CHARS) -> set[str]:
    """Literals (of up to ``budget`` characters) one of which starts every match of the parsed ``items``; ``""``
    among them when a match may start otherwise. Sound, not tight: where the tree is not plain literals, branches,
    optional parts or repeats, the literal stops there.
    """
    for i, (op, av) in enumerate(items):
        if budget <= 0:
            return {""}
        rest = items[i + 1 :]
        if op in (_C.AT, _C.ASSERT, _C.ASSERT_NOT):  # zero-width: they narrow where a match starts, never its text
            continue
        if op is _C.LITERAL or (op is _C.IN and all(o is _C.LITERAL for o, _ in av)):
            chars = [chr(av)] if op is _C.LITERAL else [chr(c) for _, c in av]
            tails = _prefixes(rest, budget - 1)
            return {c + t for c in chars for t in tails}
        if op is _C.SUBPATTERN and not av[1] & re.IGNORECASE:
            return _prefixes([*av[3].data, *rest], budget)
        if op is _C.BRANCH:
            out: set[str] = set()
            for branch in av[1]:
                out |= _prefixes([*branch.data, *rest], budget)
            return out
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) and av[1] == 1:  # an optional part, or one that must come once
            once = _prefixes([*av[2].data, *rest], budget)
            return once if av[0] else once | _prefixes(rest, budget)
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) and av[0] >= 1:  # at least once: the first time starts the match
            return _prefixes(list(av[2].data), budget)
        return {""}
    return {""}


def starts(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """The literals every match of ``pattern`` (compiled without ``re.IGNORECASE``) starts with, read off its parse
    tree (zero-width assertions skipped), none the start of another; ``None`` when it has none or too many.
    ``pattern`` finds a match in a text exactly when it matches where one of them starts.
    """
    if pattern.flags & re.IGNORECASE or not _parser_reads_as_expected():
        return None
    return _read_starts(pattern)


def _read_starts(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """``starts`` without the parser's check."""
    try:
        found = _prefixes(list(_PARSER[0].parse(pattern.pattern, pattern.flags).data))
    except Exception:  # a parser of another release, shaped otherwise: this rule runs without start literals
        return None
    if "" in found or len(found) > _MAX_STARTS:
        return None
    literals = sorted(found)
    return tuple(w for w in literals if not any(w != v and w.startswith(v) for v in literals))


@cache
def _parser_reads_as_expected() -> bool:
    """Whether the parser is there and reads known patterns as ``_prefixes`` expects (a parser that builds its tree
    otherwise without raising must not yield start literals that miss a match).
    """
    if _PARSER is None:
        return False
    known = {
        r"\b(?:ab|cd)\s+x": ("ab", "cd"),
        r"(?:the\s+)?(?:foo|bar)": ("bar", "foo", "the"),
        r"[xy]z|q": ("q", "xz", "yz"),
        r"(?:^|\s)ab": None,
        r"a*b": None,
    }
    return all(_read_starts(re.compile(source)) == want for source, want in known.items())


def first_match(pattern: re.Pattern[str], literals: tuple[str, ...] | None, text: str, finder: Any = None) -> bool:
    """Whether ``pattern`` finds a match in ``text``, trying it only where one of its start ``literals``
    (``starts(pattern)``) lies; ``finder``, an Aho-Corasick automaton of them (values: length - 1), finds them all
    in one pass.
    """
    if literals is None:
        return pattern.search(text) is not None
    match = pattern.match
    if finder is not None:
        return any(match(text, end - back) is not None for end, back in finder.iter(text))
    find = text.find
    for literal in literals:
        at = find(literal)
        while at >= 0:
            if match(text, at) is not None:
                return True
            at = find(literal, at + 1)
    return False
