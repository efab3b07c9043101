"""The read path: analyse the query, plan the dimensions (``retrieval/plan.py``), gather candidates, fuse them into
explained hits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from datetime import datetime
from typing import Protocol

import numpy as np

from memlane.config import RetrievalPreset
from memlane.documents.dense import PassageDense
from memlane.embedding.base import Embedder, Vectors
from memlane.enrich.aliases import EntityResolver, relation_of
from memlane.enrich.pipeline import Enricher
from memlane.models import Filters, Hit
from memlane.retrieval.collapse import collapse, collapse_from
from memlane.retrieval.context import context_scores, session_scores
from memlane.retrieval.fact_scores import recencies, temporal_score
from memlane.retrieval.fusion import Fused, FusionSpec, fuse, normalize, normalized_array
from memlane.retrieval.graph import GraphDimension, GraphScores
from memlane.retrieval.hit_notes import explain_validity, rerank_hits
from memlane.retrieval.plan import Planner, QueryPlan, name_candidates, without_names
from memlane.retrieval.query import analyse_query, resolve_relations
from memlane.retrieval.rerank import Reranker
from memlane.retrieval.scope_evidence import ConversationMap, Frequencies, entity_rarity, specificity, term_rarity
from memlane.retrieval.shape import query_shape
from memlane.store.base import (
    CandidateIndex,
    EntityIndex,
    GraphIndex,
    RecordReader,
    TextIndex,
    ValidityIndex,
    VectorIndex,
)
from memlane.store.records import CandidateFacts, Contradiction

CONTENT_DIMS = ("dense", "lexical")
_SIZE_TTL = 2.0  # seconds a user's memory count is reused for (it sets the scale of every rarity)
# The dimensions scored from the candidates' stored facts (besides context and session, which need positions).
_FACT_DIMS = frozenset({"entity", "temporal", "category", "intent", "recency", "importance"})

__all__ = [
    "CONTENT_DIMS",
    "Planner",
    "QueryPlan",
    "Retriever",
    "ScopeSize",
    "SearchStore",
    "name_candidates",
    "recencies",
    "temporal_score",
    "without_names",
]


class ScopeSize(Protocol):
    """How large a user's scope is (the rarity of a term or an entity is relative to it)."""

    def count(self, user_id: str | None = None) -> int:
        """How many memories the user has (every user's, without one)."""


class SearchStore(
    RecordReader, TextIndex, VectorIndex, CandidateIndex, EntityIndex, ValidityIndex, GraphIndex, ScopeSize, Protocol
):
    """What the read path uses of a store."""


class Retriever:
    """Runs a plan's dimensions against a store and fuses them."""

    def __init__(
        self,
        store: SearchStore,
        embedder: Embedder,
        enricher: Enricher,
        *,
        half_life_days: float,
        reranker: Reranker | None = None,
        rerank_depth: int = 30,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._enricher = enricher
        self._half_life = half_life_days
        self._planner = Planner()
        self._reranker = reranker
        self._rerank_depth = rerank_depth
        self._graph = GraphDimension(store)
        self._dense = PassageDense(store, store)  # documents score their best passage (memlane.documents)
        self._last = threading.local()  # this thread's last graph paths, for the hits' explanations
        self._conversations = ConversationMap()  # which sessions are conversations (context applies only there)
        self._sizes: dict[str, tuple[int, float]] = {}  # user -> (memories, when counted)
        self._frequencies = Frequencies(store)  # how many memories hold a word, per user and scope size

    def plan(
        self, query: str, user_id: str, preset: RetrievalPreset, now: datetime, qvec: Vectors | None = None
    ) -> QueryPlan:
        """Analyse the query against this user's entities and decide the dimensions and weights."""
        weights = preset.fusion.weights
        shape = query_shape(query)
        known = self._store.known_entities(user_id, name_candidates(query)) if "entity" in weights else []
        features = analyse_query(query, now, known_entities=known)
        entities: list[str] = []
        speakers: list[str] = []
        via: dict[str, str] = {}
        said: set[str] | None = None
        if "entity" in weights:
            keys = list(dict.fromkeys([*features.entity_keys, *known]))
            aliases = self._store.resolve_aliases(user_id, keys)
            if any(relation_of(m.text) for m in features.entities):  # "my sister": whose, through the alias table
                resolver = EntityResolver.from_rows(self._store.entity_aliases(user_id))
                for phrase, target in resolve_relations(features, resolver).items():
                    aliases[phrase] = target
                    if target != phrase:
                        via.setdefault(target, phrase)
            entities = self._store.known_entities(user_id, [aliases.get(k, k) for k in keys])
            speakers = self._store.speakers(user_id, [k for k in keys if aliases.get(k, k) in entities])
            walks = "graph" in weights or preset.dialogue_graph > 0  # only the graph's walk reads ``said``
            if walks and shape.turns >= 2 and shape.speakers:  # who an excerpt's turns name, by any of their names
                named = name_candidates(shape.said)
                resolved = self._store.resolve_aliases(user_id, named)
                said = {resolved.get(k, k) for k in named}
                lowered = shape.said.lower()
                said |= {target for target, phrase in via.items() if phrase in lowered}
        if qvec is not None and ("category" in weights or "intent" in weights):
            (category, c_score), (intent, i_score) = self._enricher.query_labels(qvec)
            features = replace(
                features,
                category=category if c_score >= preset.label_confidence else None,
                intent=intent if i_score >= preset.label_confidence else None,
            )
        rarity: dict[str, float] = {}
        if features.exact_terms and "lexical" in weights and preset.keyword_boost != 1.0:
            rarity = term_rarity(self._frequencies, user_id, features.exact_terms, self.scope_size(user_id))
        return self._planner.plan(
            features,
            preset,
            entities,
            speakers,
            via={e: via[e] for e in entities if e in via},
            said=None if said is None else frozenset(said),
            shape=shape,
            rarity=rarity,
            specific=lambda terms: specificity(self._frequencies, user_id, terms, self.scope_size(user_id)),
        )

    def scope_size(self, user_id: str) -> int:
        """How many memories the user has, read again at most every ``_SIZE_TTL`` seconds (a rarity's scale)."""
        now = time.monotonic()
        known = self._sizes.get(user_id)
        if known is not None and now - known[1] < _SIZE_TTL:
            return known[0]
        size = self._store.count(user_id)
        if len(self._sizes) >= 10_000:
            self._sizes.clear()
        self._sizes[user_id] = (size, now)
        return size

    def plan_and_embed(
        self, query: str, user_id: str, preset: RetrievalPreset, now: datetime
    ) -> tuple[QueryPlan, Vectors | None]:
        """The plan, and the query vector of the dense dimension (of the query less the speakers it names)."""
        weights = preset.fusion.weights
        labelled = "category" in weights or "intent" in weights  # the labels are read off the whole query
        qvec = self._embedder.embed_query(query) if labelled else None
        plan = self.plan(query, user_id, preset, now, qvec)
        if "dense" not in weights:
            return plan, None
        if qvec is None or (plan.semantic_query and plan.semantic_query != query):
            qvec = self._embedder.embed_query(plan.semantic_query or query)
        if plan.focus_query:
            both = qvec + self._embedder.embed_query(plan.focus_query)
            norm = float(np.linalg.norm(both))
            qvec = both / norm if norm > 0 else qvec
        return plan, qvec

    def signals(
        self,
        qvec: Vectors | None,
        user_id: str,
        filters: Filters,
        preset: RetrievalPreset,
        plan: QueryPlan,
        now: datetime,
    ) -> tuple[dict[str, dict[str, float]], set[str]]:
        """Raw per-dimension scores over the candidates, and which candidates may be returned (pass the filters)."""
        dims = plan.dimensions | ({plan.fusion.tie_breaker} if plan.fusion.tie_breaker else set())
        n = preset.candidates
        signals: dict[str, dict[str, float]] = {}
        if "dense" not in dims:
            qvec = None
        if qvec is not None:
            signals["dense"] = self._dense.search(user_id, qvec, n, filters)
        if "lexical" in dims:
            signals["lexical"] = dict(self._store.text_search(user_id, plan.terms, n, filters))
        pool = list(dict.fromkeys(k for s in signals.values() for k in s))
        returnable = set(pool)
        self._complete(signals, qvec, plan.terms, filters, user_id, pool)
        linked = GraphScores()
        if "graph" in dims and pool:  # memories linked to the best matches by shared entities join the pool
            linked = self._graph.score(user_id, plan.spoken_of, self._base(signals, plan.fusion))
            extra = sorted((k for k in linked.scores if k not in returnable), key=lambda k: -linked.scores[k])
            extra = extra[: self._graph.settings.nominate]
            returnable |= self._store.matching(user_id, extra, filters)
            pool = list(dict.fromkeys([*pool, *extra]))
            self._complete(signals, qvec, plan.terms, filters, user_id, extra)
            signals["graph"] = linked.scores
        self._last.graph = linked
        facts: dict[str, CandidateFacts] = {}
        if dims & {"context", "session"} and pool:
            # The turns around the strongest candidates join the pool: a turn can be found by the turn that
            # answers it (those within the context width, where the strong one lends it context).
            base = self._base(signals, plan.fusion)
            strongest = sorted(base, key=lambda k: -base[k])[: preset.expand]
            around = self._store.neighbours(user_id, strongest, preset.context_width)
            # only in a conversation: documents or notes added together are no context of each other
            talk = self._conversations.sessions(self._store, user_id, around)
            around = {k: p for k, p in around.items() if p.session_id in talk}
            extra = [k for k in around if k not in returnable]
            returnable |= self._store.matching(user_id, extra, filters)
            pool = list(dict.fromkeys([*pool, *around]))
            self._complete(signals, qvec, plan.terms, filters, user_id, extra)
            facts = self._facts(user_id, pool, plan, dims)
            where = {
                k: (f.session_id, f.position)
                for k, f in facts.items()
                if f.position is not None and f.session_id in talk
            }
            base = self._base(signals, plan.fusion)
            if "context" in dims:
                signals["context"] = context_scores(base, where, preset.context_width)
            if "session" in dims:
                signals["session"] = session_scores(base, where)
        elif dims & _FACT_DIMS and pool:
            facts = self._facts(user_id, pool, plan, dims)
        if "entity" in dims and plan.entities:
            # a memory said by a named entity scores 1; one that mentions it, by how rare the entity is in the scope
            rare = entity_rarity(self._frequencies, user_id, plan.entities, self.scope_size(user_id))
            scored = {
                k: max(1.0 if said else preset.mention_weight * rare.get(e, 1.0) for e, said in f.entities.items())
                for k, f in facts.items()
                if f.entities
            }
            signals["entity"] = {k: v for k, v in scored.items() if v > 0.0}
        if "temporal" in dims:
            span, wants = plan.features.time_range, plan.features.wants_time
            signals["temporal"] = {
                k: temporal_score(span, wants, (f.timestamp, f.event_start, f.event_end)) for k, f in facts.items()
            }
        for dim, wanted in (("category", plan.features.category), ("intent", plan.features.intent)):
            if dim in dims and wanted:
                signals[dim] = {
                    k: float((f.category if dim == "category" else f.intent) == wanted) for k, f in facts.items()
                }
        if "recency" in dims:
            signals["recency"] = recencies(facts, now, self._half_life)
        if "importance" in dims:
            signals["importance"] = {k: f.importance for k, f in facts.items()}
        if plan.fusion.penalties.get("validity", 0.0) > 0 and pool:
            signals["validity"] = {k: 1.0 for k, c in self.stale(user_id, pool, filters).items() if k in returnable}
        return signals, returnable

    def stale(self, user_id: str, keys: Sequence[str], filters: Filters) -> dict[str, Contradiction]:
        """The messages among ``keys`` whose claim a later memory superseded, as seen at ``filters.as_of``.

        Searching as of a time before the supersession, the old claim was current then and nothing is stale.
        """
        found = self._store.contradicted(user_id, keys)
        as_of = filters.as_of
        return {k: c for k, c in found.items() if as_of is None or as_of >= c.since}

    def _facts(self, user_id: str, pool: Sequence[str], plan: QueryPlan, dims: Set[str]) -> dict[str, CandidateFacts]:
        """The facts of the whole pool in one call (with the asked entities when the entity dimension runs)."""
        entities = plan.entities if "entity" in dims else []
        return self._store.candidate_facts(user_id, pool, entities)

    def _complete(
        self,
        signals: dict[str, dict[str, float]],
        qvec: Vectors | None,
        terms: Sequence[str],
        filters: Filters,
        user_id: str,
        keys: Sequence[str],
    ) -> None:
        """Give every key an exact score in every content dimension, not just in those that nominated it."""
        if qvec is not None and "dense" in signals:
            missing = [k for k in keys if k not in signals["dense"]]
            signals["dense"].update(self._dense.scores(user_id, qvec, missing))
        if "lexical" in signals:
            lexical = signals["lexical"]
            missing = [k for k in keys if k not in lexical]
            found = self._store.text_scores(user_id, terms, missing, filters) if missing else {}
            lexical.update({k: found.get(k, 0.0) for k in missing})

    @staticmethod
    def _base(signals: Mapping[str, Mapping[str, float]], spec: FusionSpec) -> dict[str, float]:
        """The content score of each candidate (weighted, normalised dense + BM25, scaled to [0, 1])."""
        dims = [d for d in CONTENT_DIMS if spec.weights.get(d, 0.0) > 0 and d in signals]
        total = sum(spec.weights[d] for d in dims)
        if not dims or total <= 0:
            return {}
        base: dict[str, float] = {}
        for d in dims:
            sig = signals[d]
            raw = np.fromiter(sig.values(), dtype=np.float64, count=len(sig))
            # weight x value / total, as the sum over dicts wrote it (the same arithmetic, so the same values)
            part = (spec.weights[d] * normalized_array(raw, spec.normalizers.get(d, "minmax")) / total).tolist()
            if not base:
                base = dict(zip(sig, part, strict=True))
                continue
            for k, v in zip(sig, part, strict=True):
                base[k] = base.get(k, 0.0) + v
        return base

    def features(self, query: str, user_id: str, preset: RetrievalPreset, now: datetime) -> dict[str, dict[str, float]]:
        """Each engaged dimension's normalised scores over the candidates: what fusion weighs, for tuning."""
        plan, qvec = self.plan_and_embed(query, user_id, preset, now)
        signals, returnable = self.signals(qvec, user_id, Filters(), preset, plan, now)
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
        plan, qvec = self.plan_and_embed(query, user_id, preset, now)
        signals, returnable = self.signals(qvec, user_id, filters, preset, plan, now)
        # Neighbours outside the filters served as context; they compete for nothing.
        competing = {
            d: sig if returnable.issuperset(sig) else {k: v for k, v in sig.items() if k in returnable}
            for d, sig in signals.items()
        }
        depth = max(top_k, self._rerank_depth) if self._reranker is not None else top_k
        ranked: list[Fused[str]] = fuse(competing, plan.fusion, limit=depth)
        by_key = {f.key: f for f in ranked}

        def hits_of(keys: Sequence[str]) -> list[Hit]:
            items = self._store.get_many(user_id, keys)
            return [
                Hit(
                    memory=items[k],
                    score=by_key[k].score,
                    breakdown=by_key[k].breakdown,
                    triggers={d: plan.triggers[d] for d in by_key[k].breakdown if d in plan.triggers},
                    query=query,
                    passage=self._dense.passage(k) if "dense" in by_key[k].breakdown else None,
                )
                for k in keys
                if k in items
            ]

        hits = hits_of([f.key for f in ranked])
        if preset.collapse:
            folded = collapse(hits, depth)
            if len(folded) < depth == len(ranked):
                # Folding freed places: fuse again, deeper, and read on past the hits already read (only breakdowns
                # of what is returned are ever built, so the common case, where nothing folds, pays for ``depth``)
                ranked = fuse(competing, plan.fusion, limit=depth * 3)
                by_key = {f.key: f for f in ranked}
                folded = collapse_from([f.key for f in ranked], hits_of, depth, read=hits)
            hits = folded
        paths: GraphScores = getattr(self._last, "graph", GraphScores())
        for h in hits:
            why = paths.paths.path(h.memory.id) if "graph" in h.breakdown else None
            if why:
                h.triggers["graph"] = f"{plan.triggers.get('graph', 'graph')}: {why}"
        demoted = [h.memory.id for h in hits if "validity" in h.breakdown]
        if demoted:
            explain_validity(hits, self.stale(user_id, demoted, filters))
        return rerank_hits(self._reranker, query, hits, top_k) if self._reranker is not None else hits
