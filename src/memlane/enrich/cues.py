"""Quick necessary tests for the write-time scans: a pattern whose every match holds one of a few words runs only on
texts that have one of them (plain ASCII text, whose case folding and word characters are the simple ones).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

# Every ASCII character that is not a word character (``\w``: letters, digits, underscore) mapped to a space: in
# ASCII text the words are then the space-separated runs, which ``str.split`` finds faster than the regex.
NOT_WORD_TO_SPACE: Final = {i: " " for i in range(128) if not (chr(i).isalnum() or chr(i) == "_")}


@lru_cache(maxsize=2048)  # the scans of one turn (and of one add's batch) share it
def ascii_words(text: str) -> frozenset[str] | None:
    """The lower-case words (``[a-zA-Z0-9_]+`` runs) of ``text`` when it is plain ASCII, else ``None``.

    Outside ASCII a case-insensitive pattern matches more than the lower-cased words say (``ſ`` matches ``s``,
    ``K``, the Kelvin sign, matches ``k``), so no scan may be skipped there.
    """
    if not text.isascii():
        return None
    return frozenset(text.lower().translate(NOT_WORD_TO_SPACE).split())


def cue_words(words: str) -> frozenset[str]:
    """A set of cue words written as one space-separated string."""
    return frozenset(words.split())


def may_hold(text: str, cues: frozenset[str]) -> bool:
    """False only when ``text`` is plain ASCII and has none of the words ``cues`` (its scan cannot match)."""
    words = ascii_words(text)
    return words is None or not cues.isdisjoint(words)
