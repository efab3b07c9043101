"""The benchmarks' on-disk embedding cache: the vectors an uncached run would get, keyed by text and call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memlane.bench.embed_cache import ENV, DiskCachedEmbedder, bench_embedder, warm_queries
from memlane.embedding.base import Vectors
from memlane.embedding.fake import HashEmbedder


class BatchSensitive:
    """An embedder whose vectors depend on the whole call (as a model quantised per batch does), counting calls."""

    identity = "batch-sensitive-test"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0
        self.queries = 0
        self._inner = HashEmbedder(8)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        out = self._inner.embed(texts) + 0.01 * len(texts)
        unit: Vectors = (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)
        return unit

    def embed_query(self, text: str) -> Vectors:
        self.queries += 1
        return self._inner.embed_query(text)


def test_cached_vectors_equal_uncached_and_depend_on_the_call(tmp_path: Path) -> None:
    inner = BatchSensitive()
    cached = DiskCachedEmbedder(inner, tmp_path / "cache.sqlite")
    batch = ["alpha beta", "gamma", "alpha beta"]
    first = cached.embed(batch)
    assert np.array_equal(first, inner.embed(batch))
    calls = inner.calls
    again = DiskCachedEmbedder(inner, tmp_path / "cache.sqlite").embed(batch)  # a new process, same file
    assert np.array_equal(again, first) and inner.calls == calls
    alone = cached.embed(["gamma"])  # the same text in another call: computed, as an uncached run would
    assert inner.calls == calls + 1
    assert np.array_equal(alone, inner.embed(["gamma"])) and not np.array_equal(alone[0], first[1])
    q = cached.embed_query("what is gamma?")
    assert np.array_equal(cached.embed_query("what is gamma?"), q) and inner.queries == 1
    assert cached.embed([]).shape == (0, 8)
    assert cached.identity == inner.identity and cached.dim == 8


def test_only_when_the_environment_names_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert bench_embedder("hash:16") == "hash:16"
    monkeypatch.setenv(ENV, str(tmp_path / "c.sqlite"))
    wrapped = bench_embedder("hash:16")
    assert isinstance(wrapped, DiskCachedEmbedder) and wrapped.identity == "hash-test-16"


def test_warm_queries_leaves_no_timed_preset_paying_for_the_model(tmp_path: Path) -> None:
    inner = BatchSensitive()
    cached = DiskCachedEmbedder(inner, tmp_path / "cache.sqlite")
    warm_queries(cached, ["how do I?", "why?", "how do I?"])
    assert inner.queries == 2  # each distinct query once, before any timing
    for _ in range(3):  # every preset then reads the same vectors from the cache
        cached.embed_query("how do I?")
        cached.embed_query("why?")
    assert inner.queries == 2
    plain = BatchSensitive()
    warm_queries(plain, ["how do I?"])  # no disk cache: each timed preset pays its own embeddings
    assert plain.queries == 0
