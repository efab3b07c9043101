"""What the read path adds to fused hits: why a message was demoted (validity), and a reranker's order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memlane.models import Hit, ScoreBreakdown
from memlane.retrieval.rerank import RerankCandidate, Reranker
from memlane.store.records import Contradiction


def explain_validity(hits: Sequence[Hit], links: Mapping[str, Contradiction]) -> None:
    """Say on each demoted message which memory now holds the value, and on that memory what it replaced."""
    replaced: dict[str, list[str]] = {}
    for h in hits:
        link = links.get(h.memory.id)
        if link is not None:
            h.triggers["validity"] = (
                f"demoted: what this message said was superseded on {link.since.date().isoformat()}; "
                f"the current value is memory {link.contradicted_by}"
            )
            replaced.setdefault(link.contradicted_by, []).append(h.memory.id)
    for h in hits:
        if h.memory.id in replaced and h.memory.is_current:
            shown = ", ".join(replaced[h.memory.id])
            h.triggers["validity"] = f"current: it supersedes what message(s) {shown} said, ranked below it"


def rerank_hits(reranker: Reranker, query: str, hits: list[Hit], top_k: int) -> list[Hit]:
    """Reorder the fused hits with the reranker; each hit keeps its fusion breakdown and gains a ``rerank`` entry.

    The hit's score stays the fused score (what its breakdown sums to); the order is the reranker's, and the
    ``rerank`` entry carries its score and rank (weight 0: it is an order, not a part of the sum).
    """
    by_key = {h.memory.id: h for h in hits}
    offered = [RerankCandidate(h.memory.id, h.memory.text, h.score) for h in hits]
    order = reranker.rerank(query, offered, top_k)
    out: list[Hit] = []
    for position, r in enumerate(order, start=1):
        hit = by_key[r.key]
        hit.breakdown["rerank"] = ScoreBreakdown(
            raw=r.score, normalized=r.score, weight=0.0, contribution=0.0, rank=position
        )
        hit.triggers["rerank"] = f"order set by {reranker.identity} over the best {len(offered)} fused"
        out.append(hit)
    return out
