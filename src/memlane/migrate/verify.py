"""Checking a copy: the same counts on both sides, and a sample of vector and text searches ranking the same memories."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from memlane.models import Filters, MemoryItem
from memlane.store.base import Store, StoreTransfer
from memlane.store.records import ScoredIds, StoredRelation

#: Scores closer than this are a tie: tied memories may come back in another order on another backend.
TIE = 1e-4
_WORD = re.compile(r"\w{4,}")


@dataclass(frozen=True, slots=True)
class Check:
    """One comparison of the source and the target."""

    name: str
    source: str
    target: str
    ok: bool


def _same_ranking(a: ScoredIds, b: ScoredIds) -> bool:
    """The same scores, and above the last score the same memories with the same scores (tied ones may come in
    another order, and which of the memories tied at the cut made the list may differ).
    """
    if len(a) != len(b) or not np.allclose([s for _, s in a], [s for _, s in b], atol=TIE):
        return False
    if not a:
        return True
    cut = min(a[-1][1], b[-1][1]) + TIE
    above_a = {i: s for i, s in a if s > cut}
    above_b = {i: s for i, s in b if s > cut}
    return above_a.keys() == above_b.keys() and all(abs(above_a[i] - above_b[i]) <= TIE for i in above_a)


def _archived(store: Store, user_id: str) -> int:
    n, page = 0, 1000
    while got := store.archived(user_id, page, n):
        n += len(got)
        if len(got) < page:
            break
    return n


def _closed(relations: Sequence[StoredRelation]) -> int:
    return sum(r.valid_until is not None for r in relations)


def _sample(store: Store, size: int) -> list[MemoryItem]:
    total = store.count()
    step = max(1, total // max(1, size))
    return list(islice(store.iter_items(None), 0, None, step))[:size]


def verify(source: Store, target: Store, *, sample: int = 20, k: int = 10) -> list[Check]:
    """Counts (memories, kinds, users, archive, feedback, jobs, history, graph relations and their sources, flags,
    sealed originals) and ``sample`` vector and text searches.
    """
    checks: list[Check] = []

    def check(name: str, a: object, b: object) -> None:
        checks.append(Check(name, str(a), str(b), a == b))

    check("memories", source.count(), target.count())
    check("users with memories", source.user_count(), target.user_count())
    check("memories by kind", sorted(source.count_by_kind().items()), sorted(target.count_by_kind().items()))
    check("model", source.embedder_identity(), target.embedder_identity())
    fb_s, fb_t = source.feedback(None), target.feedback(None)
    check("feedback judgements", len(fb_s), len(fb_t))
    users = source.user_ids() if isinstance(source, StoreTransfer) else []
    check("archived memories", sum(_archived(source, u) for u in users), sum(_archived(target, u) for u in users))
    check(
        "jobs",
        sum(len(source.jobs(u, None, 1_000_000)) for u in users),
        sum(len(target.jobs(u, None, 1_000_000)) for u in users),
    )
    if isinstance(source, StoreTransfer) and isinstance(target, StoreTransfer):
        check(
            "memories with history",
            sum(len(source.history_ids(u)) for u in users),
            sum(len(target.history_ids(u)) for u in users),
        )
    if isinstance(source, StoreTransfer) and isinstance(target, StoreTransfer):
        rel_s = [r for u in users for r in source.stored_relations(u)]
        rel_t = [r for u in users for r in target.stored_relations(u)]
        check("graph relations", len(rel_s), len(rel_t))
        check("graph relation sources", sum(len(r.sources) for r in rel_s), sum(len(r.sources) for r in rel_t))
        check("closed graph relations", _closed(rel_s), _closed(rel_t))
        check(
            "injection flags",
            sum(len(source.injection_flags(u)) for u in users),
            sum(len(target.injection_flags(u)) for u in users),
        )
        check(
            "sealed PII originals",
            sum(len(source.sealed_originals(u)) for u in users),
            sum(len(target.sealed_originals(u)) for u in users),
        )
    items = _sample(source, sample)
    # Another text engine (SQLite's FTS5 and PostgreSQL's BM25 count statistics and split words differently) gives
    # other scores by design: there, each sampled memory must be found by its own words on both sides, or on neither.
    # (the SQL stores share ``text_search``'s dispatch to their read models; the engine is ``_text_search_sql``)
    same_text = _text_engine(source) is _text_engine(target)
    vec_ok = text_ok = hist_ok = 0
    for it in items:
        if isinstance(source, StoreTransfer):
            entry = source.stored_entries(it.user_id, [it.id]).get(it.id)
            if entry is not None:
                # The target scores the source's best k alike: the vectors came over whole. (Comparing the two
                # searches' own lists would fail on a faithful copy whenever either side's index is approximate:
                # PostgreSQL's HNSW graph, or memlane's from 50,000 vectors in a scope.)
                a = source.vector_search(it.user_id, entry.vector, k, Filters())
                scores = target.vector_scores(it.user_id, entry.vector, [i for i, _ in a])
                vec_ok += len(scores) == len(a) and all(abs(scores.get(i, np.inf) - s) <= TIE for i, s in a)
            if isinstance(target, StoreTransfer):
                hist_ok += source.history(it.user_id, it.id) == target.history(it.user_id, it.id)
        terms = _WORD.findall(it.text.lower())[:3]
        if same_text:
            a = source.text_search(it.user_id, terms, k, Filters())
            b = target.text_search(it.user_id, terms, k, Filters())
            text_ok += _same_ranking(a, b)
        else:
            found_a = {i for i, _ in source.text_search(it.user_id, terms, None, Filters())}
            found_b = {i for i, _ in target.text_search(it.user_id, terms, None, Filters())}
            text_ok += (it.id in found_a) == (it.id in found_b)
    n = len(items)
    want = f"{n}/{n}"
    if isinstance(source, StoreTransfer):
        checks.append(Check(f"vector scores of the source's top {k} alike", want, f"{vec_ok}/{n}", vec_ok == n))
    text_check = f"text searches ranking alike (top {k})" if same_text else "text searches finding the sampled memory"
    checks.append(Check(text_check, want, f"{text_ok}/{n}", text_ok == n))
    if isinstance(source, StoreTransfer) and isinstance(target, StoreTransfer):
        checks.append(Check("sampled histories equal", want, f"{hist_ok}/{n}", hist_ok == n))
    return checks


def _text_engine(store: object) -> object:
    """What scores a store's text searches: its own index query where the text index is the SQL stores' shared one."""
    kind = type(store)
    return getattr(kind, "_text_search_sql", getattr(kind, "text_search", None))
