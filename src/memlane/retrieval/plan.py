"""The planner: from a query's features and a preset, which dimensions engage and at what weight, and why."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from memlane.config import RetrievalPreset
from memlane.enrich.entities import canonical
from memlane.enrich.temporal import TimeSpan
from memlane.retrieval.fusion import FusionSpec
from memlane.retrieval.query import QueryFeatures
from memlane.retrieval.shape import QueryShape, query_shape
from memlane.retrieval.text import query_terms

_NAME_TOKEN = re.compile(r"[^\W_][\w'’.-]*", re.UNICODE)


def name_candidates(query: str, max_words: int = 3) -> list[str]:
    """Canonical forms of every run of up to ``max_words`` words in the query: what might name an entity."""
    words = [m.group(0) for m in _NAME_TOKEN.finditer(query)]
    out: dict[str, None] = {}
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            out.setdefault(canonical(" ".join(words[i : i + n])), None)
    return [c for c in out if c]


@dataclass(frozen=True)
class QueryPlan:
    """What the planner decided for one query: the fusion to run and why each dimension is engaged."""

    fusion: FusionSpec
    features: QueryFeatures
    entities: list[str]
    triggers: dict[str, str] = field(default_factory=dict)
    semantic_query: str = ""  # what the dense dimension embeds: the query less the speakers it names
    shape: QueryShape | None = None
    lexical_terms: list[str] | None = None  # what BM25 searches, when not all of the query's terms
    focus_query: str = ""  # a part of the query embedded too, its vector averaged with the semantic query's
    # the entities named in an excerpt's turns (not its speaker labels), through the user's aliases; None: not known
    said_entities: frozenset[str] | None = None

    @property
    def terms(self) -> list[str]:
        return self.features.terms if self.lexical_terms is None else self.lexical_terms

    @property
    def dimensions(self) -> frozenset[str]:
        return frozenset(d for d, w in self.fusion.weights.items() if w > 0)

    @property
    def spoken_of(self) -> list[str]:
        """The entities the query is about, where the graph's walk starts: in a dialogue excerpt, a name seen only as
        a speaker label ("Sam: When did you start?") says who talks, not what is asked about, and is left out.
        """
        shape = self.shape
        if shape is None or shape.turns < 2 or not shape.speakers:
            return self.entities
        labels = {canonical(s) for s in shape.speakers}
        said = self.said_entities if self.said_entities is not None else frozenset(name_candidates(shape.said))
        return [e for e in self.entities if e not in labels or e in said]


class Planner:
    """Turns query features and a preset into a ``QueryPlan``: a dimension the query gives no evidence for is off.

    The query's shape sets the weights too: exact-match terms (codes, identifiers, quoted strings) raise the keyword
    weight; a dialogue excerpt or long passage as the query lowers it and keeps BM25 to its last turn, since most of
    its words are about something else than what it seeks (the dense dimension still reads all of it).
    """

    def plan(
        self,
        features: QueryFeatures,
        preset: RetrievalPreset,
        entities: Sequence[str],
        speakers: Sequence[str] = (),
        *,
        via: Mapping[str, str] | None = None,
        said: frozenset[str] | None = None,
        shape: QueryShape | None = None,
        rarity: Mapping[str, float] | None = None,
        specific: Callable[[Sequence[str]], float | None] | None = None,
    ) -> QueryPlan:
        """The plan; ``via`` maps an entity to the query's words that named it ("anna" -> "my sister"); ``said``, for
        a dialogue excerpt, the entities its turns name (as opposed to its speaker labels), when the caller resolved
        them; ``shape``, the query's shape when the caller measured it already; ``rarity``, how rare each exact-match
        term is in the scope (``scope_evidence.term_rarity``: the keyword boost scales with the rarest; None: not
        measured, every term counts as rare); ``specific``, how specific the words BM25 searches are in the scope
        (``scope_evidence.specificity``), which scales the keyword weight when the preset asks for it.
        """
        spec = preset.fusion
        weights = dict(spec.weights)
        triggers: dict[str, str] = {}
        shape = shape or query_shape(features.text)
        terms = features.terms
        lexical_terms: list[str] | None = None
        exact = features.exact_terms
        strength = 0.0
        if exact:
            strength = 1.0 if rarity is None else max(rarity.get(t, 0.0) for t in exact)
        boosted = strength > 0.0
        conversational = shape.is_dialogue and not boosted
        excerpt = conversational and shape.turns >= 2
        focus_terms = len(query_terms(shape.last_turn)) if excerpt else 0
        thin = excerpt and focus_terms < preset.dialogue_focus_terms
        if "dense" in weights:
            triggers["dense"] = "always: semantic similarity to the query"
        follow_up = excerpt and shape.is_follow_up
        said_terms = follow_up and preset.follow_up_terms == "said"
        if "lexical" in weights:
            if conversational and preset.dialogue_last_turn and shape.turns >= 2:
                lexical_terms = query_terms(shape.said if said_terms else shape.last_turn)
                terms = lexical_terms
            triggers["lexical"] = f"BM25 over {len(terms)} query term(s)" if terms else "no content words"
            if lexical_terms is not None:
                triggers["lexical"] += " of the excerpt's turns" if said_terms else " of the excerpt's last turn"
            factor = specific(terms) if specific is not None and preset.lexical_specificity and terms else None
            if factor is not None and factor < 1.0:
                weights["lexical"] *= factor
                triggers["lexical"] += f"; its rarest word's IDF in this scope: keyword weight x{factor:.2f}"
            if boosted and preset.keyword_boost != 1.0:
                factor = 1.0 + (preset.keyword_boost - 1.0) * strength
                weights["lexical"] *= factor
                rare = [t for t in exact if rarity is None or rarity.get(t, 0.0) > 0.0]
                shown = ", ".join(repr(t) for t in rare[:5])
                scale = "" if rarity is None else f" (rarity {strength:.2f} in this scope)"
                triggers["lexical"] += f"; exact-match terms {shown}{scale}: keyword weight x{factor:.3g}"
            elif follow_up and preset.follow_up_lexical is not None and len(weights) > 1:
                weights["lexical"] *= preset.follow_up_lexical
                triggers["lexical"] += (
                    f"; the query is {shape.describe()} ending in a follow-up: keyword weight x{preset.follow_up_lexical:g}"
                )
            elif conversational and preset.dialogue_lexical != 1.0 and len(weights) > 1:
                weights["lexical"] *= preset.dialogue_lexical
                triggers["lexical"] += f"; the query is {shape.describe()}: keyword weight x{preset.dialogue_lexical:g}"
        if "entity" in weights:
            if entities:
                named = via or {}
                triggers["entity"] = "the query names " + ", ".join(
                    f"{e!r} (as {named[e]!r})" if e in named else repr(e) for e in entities
                )
                if speakers and preset.speaker_entity_weight is not None:
                    weights["entity"] = preset.speaker_entity_weight
                    shown = " and ".join(repr(s) for s in speakers)
                    verb = "speaks" if len(speakers) == 1 else "speak"
                    triggers["entity"] += (
                        f"; {shown} {verb} here: own turns count most (weight {preset.speaker_entity_weight:g})"
                    )
            else:
                weights["entity"] = 0.0
        if "context" in weights:
            if preset.context_width > 0:
                triggers["context"] = (
                    f"turns within {preset.context_width} of a memory in its session (a conversation: its turns "
                    "alternate between speakers or roles)"
                )
            else:
                weights["context"] = 0.0
        if "session" in weights:
            triggers["session"] = "how well the memory's session (a conversation) as a whole matches the query"
        if "graph" not in weights and excerpt and preset.dialogue_graph > 0:
            weights["graph"] = preset.dialogue_graph
        if "graph" in weights:
            triggers["graph"] = (
                "personalised PageRank from the best matches and the entities named, over shared entities"
            )
            if "graph" not in spec.weights:
                triggers["graph"] += f"; the query is {shape.describe()}: graph weight {preset.dialogue_graph:g}"
        if "temporal" in weights:
            if features.time_range is not None:
                span = features.time_range
                triggers["temporal"] = f"the query asks about {span.text!r} ({_span_text(span)})"
            elif features.wants_time:
                triggers["temporal"] = "the query asks when: memories that name a time"
            else:
                weights["temporal"] = 0.0
        for dim in ("category", "intent"):
            if dim in weights:
                label = features.category if dim == "category" else features.intent
                if label:
                    triggers[dim] = f"the query is about {label!r}" if dim == "category" else f"it seeks a {label!r}"
                else:
                    weights[dim] = 0.0
        if thin and not said_terms and weights.get("lexical", 0.0) > 0:
            factor = focus_terms / preset.dialogue_focus_terms
            weights["lexical"] *= factor
            triggers["lexical"] += f"; its last turn has {focus_terms} content word(s): keyword weight x{factor:.2g}"
        fusion = FusionSpec(
            spec.method,
            weights,
            normalizers=spec.normalizers,
            rrf_k=spec.rrf_k,
            tie_breaker=spec.tie_breaker,
            multi_bonus=spec.multi_bonus,
            multi_threshold=spec.multi_threshold,
            penalties=spec.penalties,
        )
        semantic = features.text
        focus = ""
        dialogue_dense = preset.dialogue_dense
        if follow_up and preset.follow_up_dense is not None:
            dialogue_dense = preset.follow_up_dense
        if "dense" in weights and conversational and shape.turns >= 2 and shape.last_turn and not thin:
            if dialogue_dense == "last":
                semantic = shape.last_turn
                triggers["dense"] += f"; the query is {shape.describe()}: its last turn is embedded"
            elif dialogue_dense == "both":
                focus = shape.last_turn
                triggers["dense"] += f"; the query is {shape.describe()}: the whole and its last turn, averaged"
        if "entity" in triggers and speakers and semantic == features.text:
            semantic = without_names(features, speakers)
            if semantic != features.text:
                shown = ", ".join(repr(n) for n in speakers)
                triggers["dense"] += f", without the speaker names the entity dimension covers ({shown})"
        return QueryPlan(
            fusion=fusion,
            features=features,
            entities=list(entities),
            triggers=triggers,
            semantic_query=semantic,
            shape=shape,
            lexical_terms=lexical_terms,
            focus_query=focus,
            said_entities=said,
        )


def without_names(features: QueryFeatures, names: Sequence[str]) -> str:
    """The query with the mentions of ``names`` (canonical) cut out, possessives included.

    A question about a person's memories ("What did Caroline paint?") is then embedded by what it asks, not by
    whose memories it asks about; the entity dimension takes care of the who. The query is kept whole when
    nothing would be left.
    """
    wanted = set(names)
    cuts = sorted((m.start, m.end) for m in features.entities if m.start >= 0 and canonical(m.text) in wanted)
    if not cuts:
        return features.text
    text, kept, last = features.text, [], 0
    for start, end in cuts:
        if start < last:
            continue
        kept.append(text[last:start])
        last = end
        tail = _POSSESSIVE_TAIL.match(text, last)
        if tail:
            last = tail.end()
    kept.append(text[last:])
    stripped = " ".join("".join(kept).split())
    return stripped if any(ch.isalnum() for ch in stripped) else features.text


_POSSESSIVE_TAIL = re.compile(r"['’]s?\b")


def _span_text(span: TimeSpan) -> str:
    start = span.start.date().isoformat() if span.start.year > 1 else "..."
    end = span.end.date().isoformat() if span.end.year < 9999 else "..."
    return f"{start} to {end}"
