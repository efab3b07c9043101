"""PII redaction before storage: e-mail addresses, phone numbers, payment card numbers (Luhn-checked) and API keys
or tokens are replaced by typed placeholders such as ``[EMAIL_1]``.

Which kinds are redacted is configured (``Config.redact_pii``); the original text is sealed separately (see
``security.vault``) so an administrator can recover it and erasure destroys it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from memlane.errors import ConfigError

KINDS: Final = ("email", "phone", "card", "secret")

_EMAIL: Final = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")
_CARD: Final = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_PHONE: Final = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){2,4}(?![\w])"
)
_SECRET: Final = re.compile(
    r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic, Stripe-style secret keys
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|\bglpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWTs
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
    r"|(?<=\bBearer )[A-Za-z0-9._~+/-]{16,}=*"
)
_SECRET_ASSIGNED: Final = re.compile(
    r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token|password|passwd|pwd)\b"
    r"\s*[:=]\s*[\"']?([^\s\"']{8,})"
)


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn checksum of payment card numbers."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@dataclass(frozen=True)
class Found:
    """One piece of PII: its kind and where it is in the text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    """A text with its PII replaced: the redacted text, and the kinds that were found (empty: nothing changed)."""

    text: str
    kinds: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


def check_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    """The kinds, validated against ``KINDS`` (``all`` means every kind)."""
    wanted = tuple(dict.fromkeys(k.strip().casefold() for k in kinds if k.strip()))
    if "all" in wanted:
        return KINDS
    unknown = [k for k in wanted if k not in KINDS]
    if unknown:
        raise ConfigError(f"unknown PII kinds {unknown}; choose from {list(KINDS)} or 'all'")
    return wanted


def find_pii(text: str, kinds: Iterable[str] = KINDS) -> list[Found]:
    """Every piece of PII of the given kinds, left to right, overlaps resolved in favour of the earlier, longer one."""
    wanted = set(kinds)
    found: list[Found] = []
    if "secret" in wanted:
        found += [Found("secret", m.start(), m.end()) for m in _SECRET.finditer(text)]
        found += [Found("secret", m.start(1), m.end(1)) for m in _SECRET_ASSIGNED.finditer(text)]
    if "email" in wanted:
        found += [Found("email", m.start(), m.end()) for m in _EMAIL.finditer(text)]
    if "card" in wanted:
        for m in _CARD.finditer(text):
            digits = re.sub(r"\D", "", m.group())
            if 13 <= len(digits) <= 19 and luhn_ok(digits):
                found.append(Found("card", m.start(), m.end()))
    if "phone" in wanted:
        for m in _PHONE.finditer(text):
            digits = re.sub(r"\D", "", m.group())
            separated = m.group().startswith("+") or bool(re.search(r"[\s.()-]", m.group()))
            if 9 <= len(digits) <= 15 and separated and not _looks_like_date(m.group()):
                found.append(Found("phone", m.start(), m.end()))
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Found] = []
    for f in found:
        if not kept or f.start >= kept[-1].end:
            kept.append(f)
    return kept


def _looks_like_date(text: str) -> bool:
    return bool(
        re.fullmatch(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}(?:[ T]\d{1,2}[:.]\d{2}.*)?|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}", text)
    )


def redact(text: str, kinds: Iterable[str] = KINDS) -> Redaction:
    """``text`` with each piece of PII replaced by ``[KIND_N]`` (numbered per kind, the same value the same number)."""
    found = find_pii(text, kinds)
    if not found:
        return Redaction(text, ())
    numbers: dict[tuple[str, str], int] = {}
    counts: dict[str, int] = {}
    out: list[str] = []
    last = 0
    for f in found:
        value = text[f.start : f.end]
        key = (f.kind, value)
        if key not in numbers:
            counts[f.kind] = counts.get(f.kind, 0) + 1
            numbers[key] = counts[f.kind]
        out += [text[last : f.start], f"[{f.kind.upper()}_{numbers[key]}]"]
        last = f.end
    out.append(text[last:])
    return Redaction("".join(out), tuple(sorted({f.kind for f in found})))
