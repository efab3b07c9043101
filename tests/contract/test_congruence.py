"""Congruence of the PostgreSQL store with the SQLite store: the same ingest and queries give the same rankings.

Memory ids differ between two stores, so memories are compared by their place in the conversation (session,
position). What is held, and within which tolerance:

- dense: the same ranking of every memory and cosine similarities equal within 1e-5 (float32 vectors; pgvector and
  the SQLite store's index sum in different orders). Equal scores are ranked by (session, position) on both sides
  before comparing: the two backends break exact ties differently, and that order carries no meaning.
- lexical: for no filters or "current only" (what a search asks by default) both stores answer from the same
  per-user read model (``memlane.store.hot``: FTS5's ``bm25()`` over the user's own memories, words analysed as
  FTS5's porter unicode61), so rankings and scores agree by construction; that test now guards the wiring (both
  stores route those searches to the model, and both models hold the same rows). What is still computed two ways is
  the SQL path, taken for any other filter: BM25 over the ``tsvector`` in PostgreSQL and FTS5 in SQLite. Each is
  held to its store's read model (``test_sql_bm25_agrees_with_the_read_model``): for a store with one user and words
  both analyses split alike (this corpus: plain words of three letters or more) the scores are equal within 1e-6
  relative and the rankings identical. Where they differ, by design: FTS5's statistics span the file (another
  user's memories move a user's SQL-path scores in SQLite, never in the read model or in PostgreSQL); PostgreSQL's
  Porter stems words of one or two letters ("us" to "u") where FTS5 leaves them; its parser keeps e-mail
  addresses, URLs and decimal numbers whole where unicode61 splits them.
- the fused search (default preset, every dimension): the same ranking of the top 20 (ties as above), scores
  within 1e-6.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Config, Memory
from memlane.models import Filters
from memlane.retrieval.text import query_terms
from tests.conftest import open_backend

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
NAMES = ["Maya", "Jonas"]
WORDS = [
    "garden",
    "tomato",
    "violin",
    "concert",
    "river",
    "bridge",
    "painting",
    "sunset",
    "coffee",
    "market",
    "bicycle",
    "mountain",
    "trail",
    "recipe",
    "lasagna",
    "chess",
    "tournament",
    "puppy",
    "beagle",
    "kitchen",
    "window",
    "library",
    "novel",
    "poetry",
    "camera",
    "festival",
    "winter",
    "summer",
    "holiday",
    "airport",
    "ticket",
    "museum",
    "sculpture",
    "pottery",
    "workshop",
    "guitar",
    "lesson",
    "teacher",
    "student",
    "marathon",
    "training",
    "knee",
    "doctor",
    "surgery",
    "recovery",
    "apartment",
    "lease",
    "neighbour",
    "balcony",
    "flowers",
    "sunflower",
    "birthday",
    "present",
    "cake",
    "candle",
    "friend",
    "sister",
    "brother",
    "nephew",
    "wedding",
    "photographs",
    "ocean",
    "sailing",
    "harbour",
    "lighthouse",
    "storm",
]
LINKS = ["and", "with", "the", "for", "after", "before", "about", "from", "into", "over", "under", "near"]


def corpus() -> dict[str, list[dict[str, object]]]:
    """Three sessions of twenty turns of plain words, the same on every run."""
    rng = random.Random(14)
    sessions: dict[str, list[dict[str, object]]] = {}
    for s in range(3):
        turns: list[dict[str, object]] = []
        for t in range(20):
            words = [rng.choice(WORDS) if rng.random() < 0.7 else rng.choice(LINKS) for _ in range(rng.randint(5, 16))]
            turns.append(
                {
                    "role": "user",
                    "name": NAMES[t % 2],
                    "content": " ".join(words).capitalize() + ".",
                    "timestamp": (T0 + timedelta(days=7 * s, minutes=t)).isoformat(),
                }
            )
        sessions[f"s{s}"] = turns
    return sessions


QUERIES = [
    "When did Maya go sailing near the lighthouse?",
    "tomato garden recipe",
    "What did Jonas say about the knee surgery and recovery?",
    "violin concert tickets",
    "Which novel did the sister read in the library?",
    "beagle puppy birthday cake",
    "marathon training with the teacher",
    "photographs of the harbour storm",
]


Key = tuple[str | None, int | None]


def canonical(ranked: list[tuple[Key, float]], places: int) -> list[tuple[Key, float]]:
    """A ranking with equal scores (to ``places`` decimals) ordered by (session, position)."""
    return sorted(ranked, key=lambda pair: (-round(pair[1], places), str(pair[0][0]), pair[0][1] or 0))


def ingest(memory: Memory, user: str = "maya") -> dict[str, tuple[str | None, int | None]]:
    for session, turns in corpus().items():
        memory.add(turns, user_id=user, session_id=session)
    return {it.id: (it.session_id, it.position) for it in memory.list(user_id=user, limit=1000)}


@pytest.fixture
def pair(tmp_path: Path, config: Config) -> Iterator[tuple[Memory, Memory]]:
    sqlite = open_backend("sqlite-memory", tmp_path, config)
    postgres = open_backend("postgres", tmp_path, config)
    yield sqlite, postgres
    sqlite.close()
    postgres.close()


def test_dense_rankings_and_similarities_agree(pair: tuple[Memory, Memory]) -> None:
    sqlite, postgres = pair
    ka, kb = ingest(sqlite), ingest(postgres)
    for query in QUERIES:
        vec = sqlite.embedder.embed([query])[0]
        a = canonical([(ka[i], s) for i, s in sqlite._store.vector_search("maya", vec, 100, Filters())], 5)
        b = canonical([(kb[i], s) for i, s in postgres._store.vector_search("maya", vec, 100, Filters())], 5)
        assert len(a) == len(ka)
        assert [k for k, _ in a] == [k for k, _ in b], query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5), query


def test_lexical_rankings_and_bm25_scores_agree(pair: tuple[Memory, Memory]) -> None:
    sqlite, postgres = pair
    ka, kb = ingest(sqlite), ingest(postgres)
    compared = 0
    for query in QUERIES:
        terms = query_terms(query)
        a = [(ka[i], s) for i, s in sqlite._store.text_search("maya", terms, None, Filters())]
        b = [(kb[i], s) for i, s in postgres._store.text_search("maya", terms, None, Filters())]
        assert [k for k, _ in a] == [k for k, _ in b], query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-6), query
        compared += len(a)
    assert compared > 50  # the corpus gives the queries plenty of matches to compare


@pytest.mark.parametrize("side", [0, 1], ids=["sqlite-fts5", "postgres-tsvector"])
def test_sql_bm25_agrees_with_the_read_model(pair: tuple[Memory, Memory], side: int) -> None:
    """A filter the read model does not serve (superseded memories included) takes the SQL path: FTS5 in SQLite,
    BM25 over the ``tsvector`` in PostgreSQL. Its ranking and scores are those of the read model.
    """
    memory = pair[side]
    ingest(memory)
    compared = 0
    for query in QUERIES:
        terms = query_terms(query)
        model = memory._store.text_search("maya", terms, None, Filters())
        sql = memory._store.text_search("maya", terms, None, Filters(include_superseded=True))
        assert [i for i, _ in model] == [i for i, _ in sql], query
        assert [s for _, s in model] == pytest.approx([s for _, s in sql], rel=1e-6), query
        compared += len(model)
    assert compared > 50


def test_text_scores_are_the_search_scores_of_the_given_memories(pair: tuple[Memory, Memory]) -> None:
    _, postgres = pair
    ingest(postgres)
    for query in QUERIES:
        terms = query_terms(query)
        full = dict(postgres._store.text_search("maya", terms, None, Filters()))
        some = list(full)[::3]
        assert some
        assert postgres._store.text_scores("maya", terms, some, Filters()) == pytest.approx(
            {i: full[i] for i in some}, rel=1e-12
        )
        top = postgres._store.text_search("maya", terms, 3, Filters())
        assert [i for i, _ in top] == list(full)[:3]
        assert [v for _, v in top] == pytest.approx(list(full.values())[:3], rel=1e-12)


def test_fused_search_agrees(pair: tuple[Memory, Memory]) -> None:
    sqlite, postgres = pair
    ka, kb = ingest(sqlite), ingest(postgres)
    now = T0 + timedelta(days=30)
    for query in QUERIES:
        hits_a = sqlite._retriever.search(
            query, "maya", top_k=40, filters=Filters(), preset=sqlite._preset(None), now=now
        )
        hits_b = postgres._retriever.search(
            query, "maya", top_k=40, filters=Filters(), preset=postgres._preset(None), now=now
        )
        a = canonical([(ka[h.memory.id], h.score) for h in hits_a], 6)[:20]
        b = canonical([(kb[h.memory.id], h.score) for h in hits_b], 6)[:20]
        assert [k for k, _ in a] == [k for k, _ in b], query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-6), query


def test_lexical_scores_ignore_other_users(pair: tuple[Memory, Memory]) -> None:
    """BM25 statistics are per user on both: another user's memories change none of a user's scores."""
    sqlite, postgres = pair
    ka, kb = ingest(sqlite), ingest(postgres)
    terms = query_terms(QUERIES[1])
    before_a = {ka[i]: s for i, s in sqlite._store.text_search("maya", terms, None, Filters())}
    before_b = {kb[i]: s for i, s in postgres._store.text_search("maya", terms, None, Filters())}
    for memory in (sqlite, postgres):
        memory.add(["tomato tomato garden", "a tomato recipe from the garden"] * 5, user_id="other", session_id="x")
    after_a = {ka[i]: s for i, s in sqlite._store.text_search("maya", terms, None, Filters())}
    after_b = {kb[i]: s for i, s in postgres._store.text_search("maya", terms, None, Filters())}
    assert after_b == before_b
    assert after_a == before_a  # SQLite's read model keeps per-user statistics too (FTS5's span the whole file)
