"""The store against a plain-dict oracle: random adds, updates, deletes and searches across users."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, multiple, rule

from memlane import Config, Memory, NotFoundError
from memlane.embedding.fake import HashEmbedder

USERS = ["alice", "bob", "carol"]
WORDS = ["kite", "ramen", "violin", "garden", "python", "tokyo", "beagle", "coffee", "chess", "river"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)


class StoreVsOracle(RuleBasedStateMachine):
    memories = Bundle("memories")
    location = ":memory:"

    def __init__(self) -> None:
        super().__init__()
        target = self.location
        if target == "postgres":  # a real server (tests/pg_server.py), its test database emptied
            from tests.pg_server import postgres_url

            target = postgres_url()
        self.memory = Memory(target, embedder=HashEmbedder(dim=32), config=Config(embedder="hash"))
        self.oracle: dict[str, tuple[str, str]] = {}  # id -> (user, text)

    @rule(target=memories, user=st.sampled_from(USERS), batch=st.lists(texts, min_size=1, max_size=3))
    def add(self, user: str, batch: list[str]):
        items = self.memory.add(batch, user_id=user).items
        for it in items:
            self.oracle[it.id] = (user, it.text)
        return multiple(*[it.id for it in items])

    @rule(ref=memories, text=texts)
    def update(self, ref: str, text: str) -> None:
        mid = ref
        if mid not in self.oracle:
            return
        user, _ = self.oracle[mid]
        self.memory.update(mid, user_id=user, text=text)
        self.oracle[mid] = (user, text)

    @rule(ref=consumes(memories))
    def delete(self, ref: str) -> None:
        mid = ref
        if mid not in self.oracle:
            return
        user, _ = self.oracle.pop(mid)
        self.memory.delete(mid, user_id=user)

    @rule(user=st.sampled_from(USERS), other=st.sampled_from(USERS), ref=memories)
    def get_respects_scope(self, user: str, other: str, ref) -> None:
        mid = ref
        owner = self.oracle.get(mid, (None, None))[0]
        if owner == user:
            assert self.memory.get(mid, user_id=user).text == self.oracle[mid][1]
        else:
            try:
                self.memory.get(mid, user_id=user)
            except NotFoundError:
                pass
            else:
                raise AssertionError("a memory was visible outside its scope or after deletion")

    @rule(user=st.sampled_from(USERS), query=texts, k=st.integers(1, 20))
    def search(self, user: str, query: str, k: int) -> None:
        hits = self.memory.search(query, user_id=user, top_k=k)
        mine = {mid for mid, (u, _) in self.oracle.items() if u == user}
        assert len(hits) == min(k, len(mine))
        for h in hits:
            assert h.memory.user_id == user
            assert h.memory.id in mine
            assert h.memory.text == self.oracle[h.memory.id][1]

    @invariant()
    def counts_match(self) -> None:
        for user in USERS:
            listed = {m.id: m.text for m in self.memory.list(user_id=user, limit=10_000)}
            assert listed == {mid: t for mid, (u, t) in self.oracle.items() if u == user}

    def teardown(self) -> None:
        self.memory.close()


class PostgresStoreVsOracle(StoreVsOracle):
    location = "postgres"


StoreVsOracle.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
TestStoreVsOracle = StoreVsOracle.TestCase


class QdrantStoreVsOracle(StoreVsOracle):
    """The same machine with the vectors in Qdrant's local mode (records and text in SQLite)."""

    location = "sqlite://?vectors=qdrant+memory"


QdrantStoreVsOracle.TestCase.settings = settings(max_examples=15, stateful_step_count=25, deadline=None)
if importlib.util.find_spec("qdrant_client") is not None:
    TestQdrantStoreVsOracle = QdrantStoreVsOracle.TestCase
else:

    def test_qdrant_store_vs_oracle() -> None:
        pytest.skip("memlane[qdrant] is not installed: the oracle did not run over SQLite + Qdrant")


# The same machine and oracle against the PostgreSQL backend (fewer runs: each starts from an emptied database).
PostgresStoreVsOracle.TestCase.settings = settings(max_examples=15, stateful_step_count=25, deadline=None)
TestPostgresStoreVsOracle = PostgresStoreVsOracle.TestCase
