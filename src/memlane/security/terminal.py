"""Make untrusted text safe to show on a terminal: control, escape and bidi characters are printed as escapes."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the bidi controls that can make
# text read differently from what it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
# What json.dumps leaves raw inside strings (it escapes C0 itself; its own newlines are layout).
_UNSAFE_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every terminal control sequence shown as a visible escape (tabs and newlines kept)."""
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """``text`` on a single line: newlines and tabs escaped as well."""
    return _UNSAFE_LINE.sub(_escape, text)


def json_safe(encoded: str) -> str:
    """JSON text with the characters ``json.dumps(ensure_ascii=False)`` leaves raw (C1, bidi) as unicode escapes."""
    return _UNSAFE_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
