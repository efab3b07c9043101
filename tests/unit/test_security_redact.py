"""PII redaction: each kind found and replaced, look-alikes left alone."""

from __future__ import annotations

import pytest

from memlane.errors import ConfigError
from memlane.security.redact import KINDS, check_kinds, find_pii, luhn_ok, redact


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to ana.silva+news@example.co.uk today", "email"),
        ("call me on +44 20 7946 0958", "phone"),
        ("my number is (555) 123-4567 ext", "phone"),
        ("card 4111 1111 1111 1111 exp 12/29", "card"),
        ("card 5555-5555-5555-4444", "card"),
        ("key sk-proj-abcdefghijklmnopqrstuvwxyz0123", "secret"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "secret"),
        ("AWS AKIAIOSFODNN7EXAMPLE in the config", "secret"),
        ("Authorization: Bearer abcdefghijklmnop1234567890", "secret"),
        ("api_key = 'Zm9vYmFyYmF6cXV4'", "secret"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "secret"),
    ],
)
def test_each_kind_is_found_and_replaced(text: str, kind: str) -> None:
    found = find_pii(text)
    assert [f.kind for f in found] == [kind]
    out = redact(text)
    assert out.kinds == (kind,) and f"[{kind.upper()}_1]" in out.text
    assert text[found[0].start : found[0].end] not in out.text


@pytest.mark.parametrize(
    "text",
    [
        "I ran 5 km on 2023-05-08 at 10:30",
        "order 4111 1111 1111 1112 failed",  # fails the Luhn check
        "the year 2024 had 366 days",
        "version 1.2.3 released",
        "we met at 7.30 on 12.05.2023",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact(text).text == text and not redact(text).changed


def test_the_same_value_gets_the_same_number_and_kinds_can_be_chosen() -> None:
    text = "a@x.io, b@x.io, a@x.io and +1 415 555 2671"
    assert redact(text).text == "[EMAIL_1], [EMAIL_2], [EMAIL_1] and [PHONE_1]"
    assert redact(text, ["phone"]).text == "a@x.io, b@x.io, a@x.io and [PHONE_1]"


def test_luhn() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")


def test_kinds_are_checked() -> None:
    assert check_kinds(["all"]) == KINDS
    assert check_kinds([" Email ", "phone"]) == ("email", "phone")
    with pytest.raises(ConfigError, match="unknown PII kinds"):
        check_kinds(["emails"])
