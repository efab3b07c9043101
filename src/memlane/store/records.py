"""Typed records that cross the store seam (no backend concepts), and the key of the embedding cache."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import NamedTuple

from memlane.embedding.base import Vectors

ScoredIds = list[tuple[str, float]]
_NO_ENTITIES: Mapping[str, bool] = MappingProxyType({})


def embed_hash(index_text: str) -> str:
    """Key of the embedding cache: SHA-256 of the exact text that was embedded."""
    return hashlib.sha256(index_text.encode("utf-8")).hexdigest()


class AccessUse(NamedTuple):
    """How often a memory was returned by searches since its counts were last written, and the latest time."""

    times: int
    last: datetime


class Position(NamedTuple):
    """Where a turn sits: its session and its place in that session."""

    session_id: str | None
    position: int


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A stored message whose claim is no longer current: the typed memory distilled from it was superseded.

    ``superseded`` is that old memory, ``contradicted_by`` the one that holds the current value, ``since`` when the
    old claim stopped being valid.
    """

    memory_id: str
    superseded: str
    contradicted_by: str
    since: datetime


class CandidateFacts(NamedTuple):
    """What the read path's dimensions need to know of one candidate memory, fetched for the whole pool at once.

    ``entities`` holds those of the asked entities the memory involves, each mapped to whether the memory was
    said by that entity (else it only mentions it). A named tuple: hundreds are built per search, and a frozen
    dataclass takes twice as long to construct.
    """

    timestamp: datetime
    importance: float
    session_id: str | None = None
    position: int | None = None
    event_start: datetime | None = None
    event_end: datetime | None = None
    category: str | None = None
    intent: str | None = None
    entities: Mapping[str, bool] = _NO_ENTITIES


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """How a memory is indexed: the exact text its full-text entry holds and its vector (what a store copy moves)."""

    body: str
    vector: Vectors


@dataclass(frozen=True, slots=True)
class Feedback:
    """One judgement: was this memory useful for this query."""

    user_id: str
    query: str
    memory_id: str
    useful: bool


@dataclass(frozen=True, slots=True)
class SealedOriginal:
    """The encrypted original text of a memory whose PII was redacted, and which kinds of PII it held."""

    memory_id: str
    sealed: bytes
    kinds: tuple[str, ...]
    at: datetime


@dataclass(frozen=True, slots=True)
class StoredRelation:
    """A graph relation as one store holds it, for a whole-store copy: ``id`` and ``superseded_by`` are that store's
    own relation ids (``superseded_by`` names another relation of the same user), ``sources`` the ids of the
    memories it was read from.
    """

    id: int
    subject: str
    predicate: str
    object: str
    subject_type: str
    object_type: str
    valid_from: datetime
    valid_until: datetime | None
    superseded_by: int | None
    sources: tuple[str, ...]
