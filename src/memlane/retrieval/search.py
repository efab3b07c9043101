"""The read path: gather per-dimension candidates from the store, fuse them, return explained hits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from memlane.config import RetrievalPreset
from memlane.embedding.base import Embedder
from memlane.models import Filters, Hit
from memlane.retrieval.fusion import Fused, fuse
from memlane.retrieval.text import query_terms
from memlane.store.base import Store


@dataclass(frozen=True)
class Candidates:
    """Raw per-dimension scores over the union of every dimension's candidates."""

    signals: dict[str, dict[str, float]]


def recency(ts: datetime, now: datetime, half_life_days: float) -> float:
    """Exponential decay of age: 1.0 now, 0.5 after one half-life; future times count as now."""
    age_days = max((now - ts).total_seconds(), 0.0) / 86_400.0
    return math.pow(0.5, age_days / half_life_days)


class Retriever:
    """Runs one preset's dimensions against a store and fuses them."""

    def __init__(self, store: Store, embedder: Embedder, *, half_life_days: float) -> None:
        self._store = store
        self._embedder = embedder
        self._half_life = half_life_days

    def candidates(
        self, query: str, user_id: str, filters: Filters, preset: RetrievalPreset, now: datetime
    ) -> Candidates:
        dims = preset.dimensions
        n = preset.candidates
        signals: dict[str, dict[str, float]] = {}
        terms = query_terms(query)
        qvec = self._embedder.embed_query(query) if "dense" in dims else None
        if qvec is not None:
            signals["dense"] = dict(self._store.vector_search(user_id, qvec, n, filters))
        lexical_all: dict[str, float] = {}
        if "lexical" in dims:
            lexical_all = dict(self._store.text_search(user_id, terms, None, filters))
            best = sorted(lexical_all.items(), key=lambda kv: -kv[1])[:n]
            signals["lexical"] = dict(best)
        pool = list(dict.fromkeys(k for s in signals.values() for k in s))
        # Every candidate gets an exact score in every engaged dimension, not just those that nominated it.
        if qvec is not None:
            missing = [k for k in pool if k not in signals["dense"]]
            signals["dense"].update(self._store.vector_scores(user_id, qvec, missing))
        if "lexical" in signals:
            signals["lexical"].update({k: lexical_all.get(k, 0.0) for k in pool if k not in signals["lexical"]})
        if dims & {"recency", "importance"}:
            attrs = self._store.attributes(user_id, pool)
            if "recency" in dims:
                signals["recency"] = {k: recency(ts, now, self._half_life) for k, (ts, _) in attrs.items()}
            if "importance" in dims:
                signals["importance"] = {k: imp for k, (_, imp) in attrs.items()}
        return Candidates(signals)

    def search(
        self,
        query: str,
        user_id: str,
        *,
        top_k: int,
        filters: Filters,
        preset: RetrievalPreset,
        now: datetime,
    ) -> list[Hit]:
        cands = self.candidates(query, user_id, filters, preset, now)
        ranked: list[Fused[str]] = fuse(cands.signals, preset.fusion)[:top_k]
        items = self._store.get_many(user_id, [f.key for f in ranked])
        return [Hit(memory=items[f.key], score=f.score, breakdown=f.breakdown) for f in ranked if f.key in items]
