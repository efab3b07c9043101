"""Splitting a long text into passages that fit an embedder's token window, at paragraph and sentence boundaries."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, Protocol, runtime_checkable

from memlane.records.passages import Span

#: Word pieces a passage may hold: MiniLM reads 256 with [CLS] and [SEP], and a margin absorbs estimates.
WINDOW: Final = 240
#: The last sentence of a passage opens the next one when it is at most this many word pieces.
OVERLAP: Final = 48

_PARAGRAPH: Final = re.compile(r"\n[ \t]*\n\s*")
# A sentence ends at . ! ? (optionally closed by a quote or bracket) followed by white space, or at a line break.
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*")
_WORD: Final = re.compile(r"\S+")
_PIECE: Final = re.compile(r"\w+|[^\w\s]")

Counter = Callable[[Sequence[str]], list[int]]


@runtime_checkable
class _Tokenizes(Protocol):
    def encode(self, texts: Sequence[str], *, special_tokens: bool = True) -> list[list[int]]: ...


def estimate_pieces(texts: Sequence[str]) -> list[int]:
    """Word pieces a BERT tokenizer makes of each text, estimated: each word or sign, plus one per 6 letters past 6
    (on Django's documentation, 0.87 of MiniLM's count on average).
    """
    return [sum(1 + max(0, len(p) - 6) // 6 for p in _PIECE.findall(text)) for text in texts]


def token_counter(embedder: object) -> Counter:
    """Count word pieces with the embedder's own tokenizer when it has one (MiniLM), else estimate them."""
    while not callable(getattr(embedder, "tokenizer", None)) and getattr(embedder, "inner", None) is not None:
        embedder = embedder.inner  # type: ignore[attr-defined]  # a wrapper (the query cache): its model counts
    get = getattr(embedder, "tokenizer", None)
    if callable(get):
        tok = get()
        if isinstance(tok, _Tokenizes):

            def count(texts: Sequence[str]) -> list[int]:
                return [len(ids) for ids in tok.encode(texts, special_tokens=False)] if texts else []

            return count
    return estimate_pieces


def _units(text: str) -> list[Span]:
    """Sentences (and lines) of each paragraph, as spans without surrounding white space."""
    out: list[Span] = []
    para_start = 0
    for gap in [*_PARAGRAPH.finditer(text), None]:
        para_end = gap.start() if gap is not None else len(text)
        cursor = para_start
        for stop in [*_SENTENCE_END.finditer(text, para_start, para_end), None]:
            end = stop.start() if stop is not None else para_end
            piece = text[cursor:end]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                out.append(Span(cursor + lead, cursor + len(piece.rstrip())))
            cursor = stop.end() if stop is not None else para_end
        para_start = gap.end() if gap is not None else len(text)
    return out


def _paragraph_starts(text: str) -> set[int]:
    """Offsets where a paragraph's first non-blank character is."""
    return {gap.end() for gap in _PARAGRAPH.finditer(text)}


def _split_long(text: str, unit: Span, count: Counter, window: int) -> list[Span]:
    """A sentence longer than the window, cut between words into pieces that fit (a word longer than the window
    is a piece of its own: the embedder reads its start).
    """
    words = [Span(unit.start + m.start(), unit.start + m.end()) for m in _WORD.finditer(text[unit.start : unit.end])]
    sizes = count([text[w.start : w.end] for w in words])
    out: list[Span] = []
    first = 0
    while first < len(words):
        last, used = first, sizes[first]
        while last + 1 < len(words) and used + sizes[last + 1] <= window:
            last += 1
            used += sizes[last]
        out.append(Span(words[first].start, words[last].end))
        first = last + 1
    return out


def split_passages(
    text: str, count: Counter = estimate_pieces, *, window: int = WINDOW, overlap: int = OVERLAP
) -> list[Span]:
    """The passages of ``text``: consecutive sentences packed up to ``window`` word pieces each.

    A passage ends before a sentence that would not fit, and, once it is half full, before a new paragraph; the
    next one starts again with the previous passage's last sentence when that sentence has at most ``overlap``
    word pieces, so a statement spread over two sentences is whole in one passage. A sentence longer than the
    window is cut between words. A text that fits is one passage from its first to its last non-blank character.
    """
    if window < 1 or overlap < 0:
        raise ValueError("window must be positive and overlap not negative")
    stripped = text.strip()
    if not stripped:
        return []
    units: list[Span] = []
    sizes: list[int] = []
    found = _units(text)
    for unit, size in zip(found, count([text[u.start : u.end] for u in found]), strict=True):
        if size > window:  # (a tokenizer that truncates says "window or more", which is all this asks)
            cut = _split_long(text, unit, count, window)
            units.extend(cut)
            sizes.extend(count([text[u.start : u.end] for u in cut]))
        else:
            units.append(unit)
            sizes.append(size)
    if sum(sizes) <= window:
        return [Span(units[0].start, units[-1].end)]
    paragraphs = _paragraph_starts(text)
    passages: list[Span] = []
    first = 0
    while first < len(units):
        last, used = first, sizes[first]
        # word pieces add up over white space (WordPiece reads each word alone), so sizes are summed
        while last + 1 < len(units) and used + sizes[last + 1] <= window:
            if units[last + 1].start in paragraphs and used >= window // 2:
                break
            last += 1
            used += sizes[last]
        passages.append(Span(units[first].start, units[last].end))
        if last + 1 >= len(units):
            break
        # The next passage opens with this one's last sentence when it is short, not the whole passage, and fits
        # beside the sentence after it.
        carry = last > first and sizes[last] <= overlap and sizes[last] + sizes[last + 1] <= window
        first = last if carry else last + 1
    return passages
