"""Checks on everything a caller hands in, so bad input is refused before anything is written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memlane.errors import MissingScopeError, ValidationError


def require_scope(user_id: object, *, max_chars: int, what: str = "user_id") -> str:
    """A non-empty id string of bounded length, or an error naming ``what``."""
    if user_id is None or (isinstance(user_id, str) and not user_id.strip()):
        raise MissingScopeError(f"{what} is required: every memory belongs to a user scope")
    if not isinstance(user_id, str):
        raise ValidationError(f"{what} must be a string, got {type(user_id).__name__}")
    if len(user_id) > max_chars:
        raise ValidationError(f"{what} is longer than {max_chars} characters")
    check_utf8(user_id, what)
    return user_id


def optional_id(value: object, *, max_chars: int, what: str) -> str | None:
    """``None``, or a valid id string."""
    if value is None:
        return None
    return require_scope(value, max_chars=max_chars, what=what)


def check_utf8(text: str, what: str) -> None:
    """Reject strings that cannot be encoded as UTF-8 (lone surrogates from bad decoding)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} is not valid UTF-8 (at character {exc.start})") from None


def check_text(text: object, *, max_chars: int, what: str = "text") -> str:
    """A non-empty, valid UTF-8 string within the size limit."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{what} is not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValidationError(f"{what} is empty")
    if len(text) > max_chars:
        raise ValidationError(f"{what} is {len(text)} characters, more than the limit of {max_chars}")
    check_utf8(text, what)
    return text


def check_metadata(metadata: object, what: str = "metadata") -> dict[str, Any]:
    """A JSON-serialisable mapping with string keys."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError(f"{what} must be a mapping, got {type(metadata).__name__}")
    if any(not isinstance(k, str) for k in metadata):
        raise ValidationError(f"{what} keys must be strings")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be JSON-serialisable: {exc}") from None
    check_utf8(encoded, what)
    result: dict[str, Any] = json.loads(encoded)
    return result
