"""The graph dimension: memories linked through shared entities and relations to the query's entities and best
matches, by personalised PageRank over the user's graph around them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memlane.graph.rank import personalised_pagerank
from memlane.graph.types import GraphSlice
from memlane.store.base import GraphIndex

Node = tuple[str, str]  # ("m", memory id) or ("e", entity name)


@dataclass(frozen=True)
class GraphSettings:
    """How the graph dimension seeds and walks: ``seeds`` best content matches (weighted by their score) plus the
    entities the query names (``entity_seed`` of the seed mass, split among them); entities involved in more than
    ``max_degree`` memories are hubs and left out (a speaker of every other turn links everything); ``said_weight``
    is the weight of the edge between a turn and its speaker, mentions weighing 1; ``nominate`` is how many memories
    the graph alone may bring into the candidate pool.
    """

    seeds: int = 5
    entity_seed: float = 0.5
    max_degree: int = 15
    said_weight: float = 0.0
    restart: float = 0.5
    nominate: int = 20


class GraphPaths:
    """Explains, on demand, how the walk reached a memory (built only for the hits a search returns)."""

    def __init__(
        self,
        edges: Sequence[tuple[Node, Node, float]] = (),
        mass: Mapping[Node, float] | None = None,
        seeds: Mapping[Node, float] | None = None,
        named: Sequence[str] = (),
    ) -> None:
        self._edges, self._mass, self._seeds, self._named = edges, mass or {}, seeds or {}, set(named)
        self._neighbours: dict[Node, list[tuple[Node, float]]] | None = None

    def path(self, memory_id: str) -> str | None:
        """In words: the entity through which most mass reached the memory, and where that came from."""
        if self._neighbours is None:
            self._neighbours = {}
            for a, b, w in self._edges:
                self._neighbours.setdefault(a, []).append((b, w))
                self._neighbours.setdefault(b, []).append((a, w))
        node: Node = ("m", memory_id)
        via = self._best_in(node)
        if via is None:
            return None
        origin = None if via[1] in self._named else self._best_in(via, exclude=node)
        text = f"via {via[1]!r}" if via[0] == "e" else f"via memory {via[1][:8]}"
        if via[1] in self._named:
            text += " (named in the query)"
        elif origin is not None and origin[0] == "m":
            text += f" from memory {origin[1][:8]}, a {'seed' if origin in self._seeds else 'linked'} match"
        elif origin is not None:
            text += f" from {origin[1]!r}" + (" (named in the query)" if origin[1] in self._named else "")
        return text

    def _best_in(self, node: Node, exclude: Node | None = None) -> Node | None:
        assert self._neighbours is not None
        found = []
        for n, w in self._neighbours.get(node, []):
            degree = sum(x for _, x in self._neighbours.get(n, []))
            if n != exclude and degree > 0:
                found.append((self._mass.get(n, 0.0) * w / degree, n))
        return max(found)[1] if found else None


@dataclass(frozen=True)
class GraphScores:
    """Per memory: the PageRank mass that reached it over edges; ``paths`` explains how."""

    scores: dict[str, float] = field(default_factory=dict)
    paths: GraphPaths = field(default_factory=GraphPaths)


class GraphDimension:
    """Scores memories by personalised PageRank on the subgraph around the query's entities and best matches.

    The ``seeds`` best matches start the walk and score 0 themselves: the dimension brings in and lifts what is
    linked to them.
    """

    def __init__(self, store: GraphIndex, settings: GraphSettings | None = None) -> None:
        self._store = store
        self.settings = settings or GraphSettings()

    def score(self, user_id: str, entities: Sequence[str], base: Mapping[str, float]) -> GraphScores:
        """``entities``: canonical names the query names; ``base``: the content score of each candidate."""
        cfg = self.settings
        top = sorted((k for k, v in base.items() if v > 0), key=lambda k: -base[k])[: cfg.seeds]
        if not top and not entities:
            return GraphScores()
        graph = self._store.graph_slice(user_id, top, entities, max_degree=cfg.max_degree)
        edges = _edges(graph, cfg)
        seeds: dict[Node, float] = {}
        total = sum(base[k] for k in top)
        content_share = 1.0 - cfg.entity_seed if entities else 1.0
        for k in top:
            seeds[("m", k)] = content_share * base[k] / total if total > 0 else 0.0
        for e in entities:
            seeds[("e", e)] = seeds.get(("e", e), 0.0) + (1.0 - content_share) / len(entities)
        ranked = personalised_pagerank(edges, seeds, restart=cfg.restart)
        # The best matches are the walk's starting points, not what it finds: mass they receive from each other
        # says how connected they are, not how relevant, and re-ranked by it the first match fell below the
        # second on dialogue excerpts (docs/evaluation.md). They keep their content scores and get no graph score.
        started = set(top)
        scores = {n[1]: v for n, v in ranked.received.items() if n[0] == "m" and v > 1e-9 and n[1] not in started}
        return GraphScores(scores, GraphPaths(edges, ranked.mass, seeds, entities))


def _edges(graph: GraphSlice, cfg: GraphSettings) -> list[tuple[Node, Node, float]]:
    """Has-element edges (hubs left out) and relation edges, with each relation tied to its source memories."""
    hubs = {e for e, n in graph.degree.items() if n > cfg.max_degree}
    out: list[tuple[Node, Node, float]] = [
        (("m", m.memory_id), ("e", m.entity), cfg.said_weight if m.said_by else 1.0)
        for m in graph.mentions
        if m.entity not in hubs
    ]
    for r in graph.relations:
        out.append((("e", r.subject), ("e", r.object), 1.0))
        out.extend((("m", src), ("e", r.object), 1.0) for src in r.sources if r.object not in hubs)
        out.extend((("m", src), ("e", r.subject), 1.0) for src in r.sources if r.subject not in hubs)
    return out
