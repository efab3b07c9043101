"""Entity-table records that cross the store seam: ``AliasRow`` and ``canonical``, the key every alias is filed by."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final, NamedTuple

# A possessive or a contracted verb at the end of a name: "James'll", "Mel'd", "Anna's" name James, Mel and Anna
CLITIC: Final = re.compile(r"['’](?:s|ll|re|ve|d|m)$|['’]$", re.IGNORECASE)
_NON_WORD: Final = re.compile(r"[^\w\s&-]+")
_SPACES: Final = re.compile(r"\s+")


@lru_cache(maxsize=65_536)
def canonical(name: str) -> str:
    """The canonical key of a name: NFKD, diacritics dropped, case-folded, possessives, contracted verbs and
    punctuation removed.

    ``canonical("José's") == canonical("jose") == "jose"``; ``canonical("Dr. Anna  Smith") == "dr anna smith"``;
    ``canonical("James’ll") == "james"``.
    """
    text = unicodedata.normalize("NFKD", name.strip())
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = " ".join(CLITIC.sub("", word) for word in text.split())
    text = _NON_WORD.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


class AliasRow(NamedTuple):
    """One row of a user's entity table: ``alias`` (a canonical key) resolves to ``target`` (a canonical name).

    The entity itself has a row whose alias equals its target, carrying its ``kind`` and best ``display`` form.
    A named tuple, not a dataclass: a write compares the user's whole table as read with the table after it
    (thousands of rows), and a tuple is built, hashed and compared in C.
    """

    alias: str
    target: str
    kind: str
    display: str

    @classmethod
    def removal(cls, alias: str) -> AliasRow:
        """A row that, written, takes ``alias`` out of the table (a first name two full names now share)."""
        return cls(alias, "", "", "")

    @property
    def removes(self) -> bool:
        """Whether this row takes its alias out of the table rather than setting it."""
        return not self.target
