"""The read model's per-term cache (store/hot/termcache.py): BM25 from kept term entries is exactly BM25 recomputed.

A scope that keeps every term (no minimum, small bounds so eviction and the reset of the change record happen too)
is driven through random single-row adds (turns inserted anywhere in a session, so links move), replacements and
removals, and searched between the steps; after each step its scores must equal those of a scope built afresh
from the same rows, which has nothing kept.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from memlane.store.hot import HotRow, HotScope, termcache

VOCAB = ["tomato", "garden", "sailing", "lighthouse", "jonas", "w1", "w2", "w3", "w4", "w5", "w6"]
QUERIES = [["tomato"], ["garden", "w1"], ["sailing", "lighthouse", "w2"], ["w3", "w4", "w5", "w6"], ["jonas", "w1"]]


def _row(rng: random.Random, pk: int, position: int | None) -> HotRow:
    text = " ".join(rng.choices(VOCAB, k=rng.randint(1, 6)))
    kind = "message" if position is not None else "fact"
    return HotRow(
        pk=pk,
        id=f"m{pk}",
        kind=kind,
        session_id=rng.choice(["s0", "s1"]),
        position=position,
        ts=pk * 1_000_000,
        importance=0.5,
        event_time=None,
        event_end=None,
        category=None,
        intent=None,
        current=rng.random() > 0.1,
        # a body that is the text, the text after the speaker's name, or (rarely seen, still handled) other words
        body=rng.choice([text, f"Jonas: {text}", rng.choice(VOCAB)]) if kind == "message" else text,
        text=text,
        entities={},
        label=(rng.choice(["user", "assistant"]), ""),  # a reply is linked to its previous turn, a same-role one is not
    )


def _sig(score: float) -> float:
    """9 significant digits: the two scopes sum the collection's lengths in another order (slots differ)."""
    return float(f"{score:.9g}")


def _answers(scope: HotScope, ids: list[str]) -> list[object]:
    out: list[object] = []
    for terms in QUERIES:
        hits = scope.text_search(terms, 1000, current_only=False)
        out.append(sorted((mid, _sig(score)) for mid, score in hits))
        out.append(sorted((mid, _sig(score)) for mid, score in scope.text_scores(terms, ids).items()))
    return out


@pytest.mark.parametrize(("seed", "max_entries", "max_changes"), [(0, 10_000, 10_000), (1, 60, 10_000), (2, 10_000, 7)])
def test_scores_from_kept_terms_equal_scores_recomputed(
    monkeypatch: pytest.MonkeyPatch, seed: int, max_entries: int, max_changes: int
) -> None:
    monkeypatch.setattr(termcache, "MIN_MATCHES", 1)
    monkeypatch.setattr(termcache, "MAX_ENTRIES", max_entries)
    monkeypatch.setattr(termcache, "MAX_CHANGES", max_changes)
    rng = random.Random(seed)
    scope = HotScope()
    held: dict[int, HotRow] = {}
    next_pk = 1
    for _ in range(40):  # a first session, one row at a time
        row = _row(rng, next_pk, next_pk)
        scope.apply([row])
        held[row.pk] = row
        next_pk += 1
    kept_at_some_point = 0
    for _ in range(150):
        _answers(scope, [])  # searches fill the cache
        kept_at_some_point = max(kept_at_some_point, len(scope._terms))
        action = rng.choice(["turn", "turn", "fact", "replace", "remove"])
        if action in ("turn", "fact"):
            # a turn lands at any free position: between two turns, after the last, or where one was removed
            row = _row(rng, next_pk, rng.randint(0, 80) if action == "turn" else None)
            next_pk += 1
            taken = {(r.session_id, r.position) for r in held.values() if r.kind == "message"}
            if row.kind == "message" and (row.session_id, row.position) in taken:
                continue
            scope.apply([row])
            held[row.pk] = row
        elif action == "replace" and held:
            old = held[rng.choice(sorted(held))]
            new = replace(_row(rng, old.pk, old.position), id=old.id, session_id=old.session_id)
            scope.apply([new])
            held[old.pk] = new
        elif held:
            pk = rng.choice(sorted(held))
            scope.apply([], removed=[pk])
            del held[pk]
        fresh = HotScope()
        for pk in sorted(held):
            fresh.apply([held[pk]])
        fresh._terms.min_matches = 1 << 40  # nothing kept: every term recomputed
        ids = sorted(r.id for r in held.values())
        assert _answers(scope, ids) == _answers(fresh, ids)
    assert kept_at_some_point > 0  # the cache was in use
