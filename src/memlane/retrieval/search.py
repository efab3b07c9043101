"""The read path: analyse the query, plan the dimensions, gather candidates, fuse them into explained hits."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memlane.config import RetrievalPreset
from memlane.embedding.base import Embedder
from memlane.enrich.names import canonical_name
from memlane.models import Filters, Hit
from memlane.retrieval.context import context_scores, session_scores
from memlane.retrieval.fusion import Fused, FusionSpec, fuse, normalize
from memlane.retrieval.text import query_terms
from memlane.store.base import Store

CONTENT_DIMS = ("dense", "lexical")
_NAME_TOKEN = re.compile(r"[^\W_][\w'’.-]*", re.UNICODE)


def recency(ts: datetime, now: datetime, half_life_days: float) -> float:
    """Exponential decay of age: 1.0 now, 0.5 after one half-life; future times count as now."""
    age_days = max((now - ts).total_seconds(), 0.0) / 86_400.0
    return math.pow(0.5, age_days / half_life_days)


def name_candidates(query: str, max_words: int = 3) -> list[str]:
    """Canonical forms of every run of up to ``max_words`` words in the query: what might name an entity."""
    words = [m.group(0) for m in _NAME_TOKEN.finditer(query)]
    out: dict[str, None] = {}
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            out.setdefault(canonical_name(" ".join(words[i : i + n])), None)
    return [c for c in out if c]


@dataclass(frozen=True)
class QueryPlan:
    """What the planner decided for one query: the fusion to run and why each dimension is engaged."""

    fusion: FusionSpec
    terms: list[str]
    entities: list[str]
    triggers: dict[str, str] = field(default_factory=dict)

    @property
    def dimensions(self) -> frozenset[str]:
        return frozenset(d for d, w in self.fusion.weights.items() if w > 0)


class Planner:
    """Turns a query and a preset into a ``QueryPlan``: dimensions with no evidence in the query are switched off."""

    def plan(self, query: str, preset: RetrievalPreset, entities: Sequence[str]) -> QueryPlan:
        spec = preset.fusion
        weights = dict(spec.weights)
        triggers: dict[str, str] = {}
        terms = query_terms(query)
        if "dense" in weights:
            triggers["dense"] = "always: semantic similarity to the query"
        if "lexical" in weights:
            triggers["lexical"] = f"BM25 over {len(terms)} query term(s)" if terms else "no content words"
        if "entity" in weights:
            if entities:
                triggers["entity"] = "the query names " + ", ".join(repr(e) for e in entities)
            else:
                weights["entity"] = 0.0
        if "context" in weights:
            if preset.context_width > 0:
                triggers["context"] = f"turns within {preset.context_width} of a memory in its session"
            else:
                weights["context"] = 0.0
        if "session" in weights:
            triggers["session"] = "how well the memory's session as a whole matches the query"
        for dim in ("temporal", "category", "intent"):
            if dim in weights:
                weights[dim] = 0.0  # engaged only once the query analysis finds evidence for them
        fusion = FusionSpec(
            spec.method,
            weights,
            normalizers=spec.normalizers,
            rrf_k=spec.rrf_k,
            tie_breaker=spec.tie_breaker,
            multi_bonus=spec.multi_bonus,
            multi_threshold=spec.multi_threshold,
        )
        return QueryPlan(fusion=fusion, terms=terms, entities=list(entities), triggers=triggers)


class Retriever:
    """Runs a plan's dimensions against a store and fuses them."""

    def __init__(self, store: Store, embedder: Embedder, *, half_life_days: float) -> None:
        self._store = store
        self._embedder = embedder
        self._half_life = half_life_days
        self._planner = Planner()

    def plan(self, query: str, user_id: str, preset: RetrievalPreset) -> QueryPlan:
        entities = (
            self._store.known_entities(user_id, name_candidates(query)) if "entity" in preset.fusion.weights else []
        )
        return self._planner.plan(query, preset, entities)

    def signals(
        self, query: str, user_id: str, filters: Filters, preset: RetrievalPreset, plan: QueryPlan, now: datetime
    ) -> tuple[dict[str, dict[str, float]], set[str]]:
        """Raw per-dimension scores over the candidates, and which candidates may be returned (pass the filters)."""
        dims = plan.dimensions | ({plan.fusion.tie_breaker} if plan.fusion.tie_breaker else set())
        n = preset.candidates
        signals: dict[str, dict[str, float]] = {}
        qvec = self._embedder.embed_query(query) if "dense" in dims else None
        if qvec is not None:
            signals["dense"] = dict(self._store.vector_search(user_id, qvec, n, filters))
        lexical_all: dict[str, float] = {}
        if "lexical" in dims:
            lexical_all = dict(self._store.text_search(user_id, plan.terms, None, filters))
            signals["lexical"] = dict(sorted(lexical_all.items(), key=lambda kv: -kv[1])[:n])
        pool = list(dict.fromkeys(k for s in signals.values() for k in s))
        returnable = set(pool)
        where: dict[str, tuple[str | None, int]] = {}
        if dims & {"context", "session"} and pool:
            # Neighbours of candidates join the pool: a turn can be found by the turn that answers it.
            where = self._store.positions_around(user_id, pool, 2 * preset.context_width)
            extra = [k for k in where if k not in returnable]
            returnable |= self._store.matching(user_id, extra, filters)
            pool = list(dict.fromkeys([*pool, *where]))
        # Every candidate gets an exact score in every content dimension, not just those that nominated it.
        if qvec is not None:
            missing = [k for k in pool if k not in signals["dense"]]
            signals["dense"].update(self._store.vector_scores(user_id, qvec, missing))
        if "lexical" in signals:
            signals["lexical"].update({k: lexical_all.get(k, 0.0) for k in pool if k not in signals["lexical"]})
        if dims & {"context", "session"} and where:
            base = self._base(signals, plan.fusion)
            if "context" in dims:
                signals["context"] = context_scores(base, where, preset.context_width)
            if "session" in dims:
                signals["session"] = session_scores(base, where)
        if "entity" in dims and plan.entities:
            matches = self._store.entity_matches(user_id, plan.entities, pool)
            signals["entity"] = {
                k: max(1.0 if said else preset.mention_weight for said in m.values()) for k, m in matches.items()
            }
        if dims & {"recency", "importance"}:
            attrs = self._store.attributes(user_id, pool)
            if "recency" in dims:
                signals["recency"] = {k: recency(ts, now, self._half_life) for k, (ts, _) in attrs.items()}
            if "importance" in dims:
                signals["importance"] = {k: imp for k, (_, imp) in attrs.items()}
        return signals, returnable

    @staticmethod
    def _base(signals: Mapping[str, Mapping[str, float]], spec: FusionSpec) -> dict[str, float]:
        """The content score of each candidate (weighted, normalised dense + BM25, scaled to [0, 1])."""
        dims = [d for d in CONTENT_DIMS if spec.weights.get(d, 0.0) > 0 and d in signals]
        total = sum(spec.weights[d] for d in dims)
        if not dims or total <= 0:
            return {}
        base: dict[str, float] = {}
        for d in dims:
            normed = normalize(signals[d], spec.normalizers.get(d, "minmax"))
            for k, v in normed.items():
                base[k] = base.get(k, 0.0) + spec.weights[d] * v / total
        return base

    def features(self, query: str, user_id: str, preset: RetrievalPreset, now: datetime) -> dict[str, dict[str, float]]:
        """Each engaged dimension's normalised scores over the candidates: what fusion weighs, for tuning."""
        plan = self.plan(query, user_id, preset)
        signals, returnable = self.signals(query, user_id, Filters(), preset, plan, now)
        spec = plan.fusion
        return {
            d: {k: v for k, v in normalize(signals[d], spec.normalizers.get(d, "minmax")).items() if k in returnable}
            for d, w in spec.weights.items()
            if w > 0 and d in signals
        }

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
        plan = self.plan(query, user_id, preset)
        signals, returnable = self.signals(query, user_id, filters, preset, plan, now)
        fused: list[Fused[str]] = fuse(signals, plan.fusion)
        ranked = [f for f in fused if f.key in returnable][:top_k]
        items = self._store.get_many(user_id, [f.key for f in ranked])
        return [
            Hit(
                memory=items[f.key],
                score=f.score,
                breakdown=f.breakdown,
                triggers={d: plan.triggers[d] for d in f.breakdown if d in plan.triggers},
                query=query,
            )
            for f in ranked
            if f.key in items
        ]
