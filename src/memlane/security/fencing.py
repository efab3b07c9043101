r"""The one fence for text recalled into an LLM prompt (``Memory.context``, ``Memory.fence``, the MCP tools).

Each call draws a random nonce; its tags (``<memory-NONCE ...>``) cannot be closed from inside, since the stored text
never sees the nonce (and any copy of it is blotted out). Inside, the text is made inert before it is quoted:

- NFKC first, so full-width and small-form brackets (``＜/memory＞``, ``﹤``) become the ASCII they imitate, and
  invisible format characters (soft hyphen, zero-width space and joiners, bidi controls) are dropped, so
  ``</mem\u00adory>`` reads as what it is; every line break (CR, U+2028, ...) becomes ``\n``;
- a ``<`` that opens anything tag-shaped (``</memory>``, ``<|im_start|>``, ``<system>``) becomes ``‹``, and so
  does a look-alike bracket (``‹ 〈 ⟨ ❮ ˂ ᐸ``) before a slash or ``memor...``; ``[INST]`` and ``<<SYS>>`` markers
  are defused the same way;
- a line that starts with a role-like label (one or two words and a colon: ``System:``, ``Developer:``, ``Tool
  output:``, any name) has the label bracketed: ``[Developer]:``.

The rules are pure functions of the text, a few regular expressions over one pass each.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from typing import Final

_BREAKS: Final = re.compile(r"\r\n?|[\u0085\u000b\u000c\u2028\u2029]")
_LOOKALIKE_LT: Final = "‹〈⟨❮⧼˂ᐸ〈"
_TAG_OPEN: Final = re.compile(r"<(?=\s*/|[A-Za-z|!?]|\s*m\s*e\s*m\s*o\s*r)", re.IGNORECASE)
_LOOKALIKE_TAG: Final = re.compile(rf"[{_LOOKALIKE_LT}](?=\s*/|\s*m\s*e\s*m\s*o\s*r)", re.IGNORECASE)
_SPECIAL: Final = re.compile(r"\[/?INST\]|<</?SYS>>|\[/?(?:SYSTEM|SYS|ASSISTANT|USER)\]", re.IGNORECASE)
_ROLE_LINE: Final = re.compile(
    r"^([ \t>#*_-]*)([^\W\d_][\w'.-]{0,23}(?:[ \t][^\W\d_][\w'.-]{0,23})?)([*_]*[ \t]*:)(?=\s|$)", re.MULTILINE
)
_ATTR: Final = re.compile(r"[^\w .:@+-]")


def new_nonce() -> str:
    """A fence nonce: 48 random bits, as 12 hex digits."""
    return secrets.token_hex(6)


def _visible(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return _BREAKS.sub("\n", text)


def neutralise(text: str, nonce: str = "") -> str:
    """``text`` made inert for quoting inside a fence (see the module notes); ``nonce`` blotted out if present."""
    out = _visible(text)
    out = _SPECIAL.sub(lambda m: m.group().replace("<", "‹").replace(">", "›").replace("[", "⟦").replace("]", "⟧"), out)
    out = _TAG_OPEN.sub("‹", out)
    out = _LOOKALIKE_TAG.sub("‹", out)
    out = _ROLE_LINE.sub(lambda m: f"{m.group(1)}[{m.group(2)}]{m.group(3)}", out)
    if nonce:
        out = re.sub(re.escape(nonce), "-" * len(nonce), out, flags=re.IGNORECASE)
    return out


def attribute(value: str, limit: int = 80) -> str:
    """A value safe inside a tag's double-quoted attribute: word characters, spaces and ``.:@+-`` only."""
    return _ATTR.sub("", _visible(value))[:limit]
