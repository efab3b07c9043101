"""The keys derived from a memory's text: its normalised form, its idempotency hash and its index text."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from json.encoder import encode_basestring  # what json.dumps writes for a string when ensure_ascii is off

from memlane.models import MemoryItem, MemoryKind


def normalise_text(text: str) -> str:
    """The form hashed for idempotency: NFC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def _key_json(parts: Sequence[str | None], occurrence: int | None = None) -> str:
    """``json.dumps([*parts, occurrence], ensure_ascii=False)`` (without ``occurrence`` when it is None), written
    directly: strings as the encoder writes them, None as null (a third of the encoder's time).
    """
    out = ["null" if part is None else encode_basestring(part) for part in parts]
    if occurrence is not None:
        out.append(str(int(occurrence)))
    return "[" + ", ".join(out) + "]"


def content_hash(
    user_id: str, agent_id: str | None, session_id: str | None, kind: str, text: str, *, normalised: str | None = None
) -> str:
    """SHA-256 of the normalised text within its scope (``normalised``: ``normalise_text(text)`` when known)."""
    norm = normalise_text(text) if normalised is None else normalised
    return hashlib.sha256(_key_json([user_id, agent_id, session_id, kind, norm]).encode("utf-8")).hexdigest()


def message_hash(
    user_id: str,
    agent_id: str | None,
    session_id: str | None,
    text: str,
    timestamp: datetime | None = None,
    occurrence: int = 0,
    *,
    normalised: str | None = None,
) -> str:
    """The idempotency key of a message: its scope and normalised text, the timestamp the caller gave (if any),
    and its occurrence number among identical messages of the same ``add`` call.

    So re-adding a conversation is a no-op, while the same words said twice in one batch stay two turns.
    Without a timestamp and at occurrence 0 it equals ``content_hash`` (the key of stores written before).
    ``normalised`` is ``normalise_text(text)`` when the caller has it already.
    """
    norm = normalise_text(text) if normalised is None else normalised
    if timestamp is None and occurrence == 0:
        return content_hash(user_id, agent_id, session_id, MemoryKind.MESSAGE.value, text, normalised=norm)
    stamp = None if timestamp is None else timestamp.isoformat()
    payload = _key_json([user_id, agent_id, session_id, MemoryKind.MESSAGE.value, norm, stamp], occurrence)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def index_text(item: MemoryItem) -> str:
    """What gets embedded and full-text indexed: a message's text prefixed by its speaker when known."""
    if item.kind is MemoryKind.MESSAGE and item.speaker:
        return f"{item.speaker}: {item.text}"
    return item.text
