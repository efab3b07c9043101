"""Write-time enrichment of new memories: entities, event time, category, intent and importance in one pass."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from memlane.embedding.base import Embedder, Vectors
from memlane.enrich import temporal
from memlane.enrich.aliases import EntityResolver
from memlane.enrich.classify import CATEGORIES, INTENTS, IntentClassifier, PrototypeClassifier
from memlane.enrich.cues import ascii_words
from memlane.enrich.entities import canonical
from memlane.enrich.importance import importance
from memlane.enrich.temporal import candidate_matches, event_time
from memlane.models import MemoryItem

log = logging.getLogger(__name__)

# What a query can look for in a memory's intent: questions and requests are what queries are, not what they seek.
SOUGHT_INTENTS = {label: examples for label, examples in INTENTS.items() if label not in ("question", "request")}


def forget_cached_text() -> None:
    """Empty the process-wide caches that hold pieces of user text (whole turns' word sets, time phrases, names),
    so that text a user erased does not stay in memory until other text pushes it out. Called on every erasure.
    """
    ascii_words.cache_clear()
    temporal.forget_phrases()
    canonical.cache_clear()


class Enricher:
    """Fills the write-time dimensions of memories whose vectors were just computed.

    The classifiers embed their prototype sentences once, with the store's embedder, on first use.
    """

    def __init__(self, embedder: Embedder) -> None:
        self._categories = PrototypeClassifier(embedder, CATEGORIES)
        self._intents = IntentClassifier(embedder, INTENTS)
        self._sought = PrototypeClassifier(embedder, SOUGHT_INTENTS)
        self._lock = threading.Lock()

    def enrich(self, items: Sequence[MemoryItem], vectors: Vectors, resolver: EntityResolver) -> dict[str, list[str]]:
        """Set entities, event span, category, intent and importance of ``items`` (in place), in order.

        ``resolver`` is the user's alias table; it learns from these turns (persist it with the items). Returns the
        aliases each item taught, by memory id (the item is their source: erasing it may erase them).
        """
        taught: dict[str, list[str]] = {}
        if not items:
            return taught
        resolver.take_taught()
        with self._lock:  # classifiers build their prototypes lazily
            categories = self._categories.best(vectors)
            intents = self._intents.best(vectors, [it.text for it in items])
        for item, category, intent in zip(items, categories, intents, strict=True):
            times = candidate_matches(item.text)  # one regex pass, shared by entities, event time and importance
            mentions = resolver.observe(item.text, item.speaker, item.role, time_spans=[m.span() for m in times])
            names = resolver.resolve_all(mentions, item.speaker, item.role)
            speaker = canonical(item.speaker) if item.speaker else ""
            item.entities = list(dict.fromkeys([speaker, *names] if speaker else names))
            span = event_time(item.text, item.timestamp, matches=times) if times else None
            if span is not None:
                item.event_time, item.event_end = span.start, span.end
            item.category = category[0]
            item.intent = intent[0]
            item.importance = importance(
                item.text, role=item.role, kind=item.kind.value, mentions=mentions, has_time=bool(times)
            )
            if aliases := resolver.take_taught():
                taught[item.id] = aliases
        return taught

    def learn(self, items: Sequence[MemoryItem], resolver: EntityResolver) -> dict[str, list[str]]:
        """Teach ``resolver`` the entities and aliases of ``items``, in order, as ``enrich`` does; no item changes
        (an import keeps the fields its file holds, and rebuilds the entity table they came with). Returns the
        aliases each item taught, by memory id.
        """
        taught: dict[str, list[str]] = {}
        resolver.take_taught()
        for item in items:
            times = candidate_matches(item.text)
            resolver.observe(item.text, item.speaker, item.role, time_spans=[m.span() for m in times])
            if aliases := resolver.take_taught():
                taught[item.id] = aliases
        return taught

    def query_labels(self, vector: Vectors) -> tuple[tuple[str, float], tuple[str, float]]:
        """The best category of a query, and the intent of the memories it looks for, each with its score."""
        with self._lock:
            category = self._categories.classify(vector)[0][0]
            sought = self._sought.classify(vector)[0][0]
        return category, sought
