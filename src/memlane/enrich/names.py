"""Canonical forms of entity names, so that "Caroline's", "caroline" and "Caróline" index alike."""

from __future__ import annotations

import re
import unicodedata

_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_SPACE = re.compile(r"\s+")


def canonical_name(name: str) -> str:
    """Case-folded, accent-stripped, possessive-free, single-spaced form of a name."""
    text = _SPACE.sub(" ", name.strip())
    text = _POSSESSIVE.sub("", text)
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped).casefold().strip()
