"""Idempotency and near-duplicate detection: the SHA-256 of normalised text in its scope, and similarity + entities."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memlane.errors import ConfigError
from memlane.models import MemoryItem, SourceRef


def normalise_text(text: str) -> str:
    """The form hashed for idempotency: NFC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def normalised_hash(text: str, scope: Sequence[str | None]) -> str:
    """SHA-256 (hex) of the normalised ``text`` within ``scope``; re-adding the same content gives the same hash.

    ``scope`` is the tuple the hash is unique in, e.g. ``(user_id, agent_id, session_id, kind)``: with that tuple
    the value equals ``memlane.engine.content_hash``. Leave the session out for typed memories that should be
    idempotent across sessions.
    """
    payload = json.dumps([*scope, normalise_text(text)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DedupThresholds:
    """When two memories are near-duplicates.

    Cosine similarity of at least ``similarity`` and entity overlap (Jaccard of case-folded names) of at least
    ``entity_overlap``; when neither memory names an entity, ``similarity_without_entities`` alone decides.
    """

    similarity: float = 0.90
    entity_overlap: float = 0.5
    similarity_without_entities: float = 0.95

    def __post_init__(self) -> None:
        for name in ("similarity", "entity_overlap", "similarity_without_entities"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"DedupThresholds.{name} must be within [0, 1], got {value}")


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    va = np.asarray(a, dtype=np.float64).ravel()
    vb = np.asarray(b, dtype=np.float64).ravel()
    if va.shape != vb.shape:
        raise ConfigError(f"vectors of different dimensions: {va.shape[0]} and {vb.shape[0]}")
    denominator = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / denominator if denominator else 0.0


def entity_overlap(a: Iterable[str], b: Iterable[str]) -> float | None:
    """Jaccard overlap of two sets of entity names, case-folded; ``None`` when both are empty."""
    sa = {" ".join(x.casefold().split()) for x in a if x.strip()}
    sb = {" ".join(x.casefold().split()) for x in b if x.strip()}
    if not sa and not sb:
        return None
    return len(sa & sb) / len(sa | sb)


def is_near_duplicate(
    a_vec: npt.ArrayLike,
    b_vec: npt.ArrayLike,
    a_entities: Iterable[str],
    b_entities: Iterable[str],
    thresholds: DedupThresholds | None = None,
) -> bool:
    """Whether two memories say the same thing: high embedding similarity and overlapping entities."""
    return is_similar(cosine(a_vec, b_vec), a_entities, b_entities, thresholds)


def is_similar(
    similarity: float,
    a_entities: Iterable[str],
    b_entities: Iterable[str],
    thresholds: DedupThresholds | None = None,
) -> bool:
    """``is_near_duplicate`` for an already computed cosine ``similarity`` (e.g. a search score)."""
    limits = thresholds or DedupThresholds()
    overlap = entity_overlap(a_entities, b_entities)
    if overlap is None:
        return similarity >= limits.similarity_without_entities
    return similarity >= limits.similarity and overlap >= limits.entity_overlap


def merge_sources(*groups: Iterable[SourceRef]) -> list[SourceRef]:
    """All sources of several memories, each message once (first occurrence kept), in order."""
    seen: set[str] = set()
    out: list[SourceRef] = []
    for group in groups:
        for ref in group:
            if ref.memory_id not in seen:
                seen.add(ref.memory_id)
                out.append(ref)
    return out


def merge_into(kept: MemoryItem, duplicate: MemoryItem) -> MemoryItem:
    """``kept`` updated with a near-duplicate: all sources, all entities, the higher importance and confidence.

    Pure: returns a copy; the caller stores it and records the merge. The text of ``kept`` stays.
    """
    merged = kept.model_copy(deep=True)
    merged.sources = merge_sources(kept.sources, duplicate.sources)
    merged.entities = list(dict.fromkeys([*kept.entities, *duplicate.entities]))
    merged.importance = max(kept.importance, duplicate.importance)
    merged.confidence = max(kept.confidence, duplicate.confidence)
    if merged.event_time is None:
        merged.event_time = duplicate.event_time
    merged.updated_at = max(kept.updated_at, duplicate.updated_at)
    return merged
