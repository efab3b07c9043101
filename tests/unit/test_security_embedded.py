"""The detector's embedding head at ingest: the write's own vectors reach it (each text embedded once), a head
fitted for another embedder is not used, and the shipped head file loads and round-trips.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memlane import Config, Memory
from memlane.embedding.base import Vectors
from memlane.embedding.fake import HashEmbedder
from memlane.errors import ConfigError
from memlane.security.classifier import ClassifierModel
from memlane.security.detect import CombinedDetector
from memlane.security.guard import VectorMemo
from memlane.security.head import DetectorHead, EmbeddingHead, Stacker

MARK = "pelican"  # the word the test head treats as an attack


class CountingEmbedder(HashEmbedder):
    """The hash embedder, with the texts it was asked to embed, and one dimension lit for texts with ``MARK``."""

    def __init__(self) -> None:
        super().__init__(16)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        out = super().embed(texts)
        for i, t in enumerate(texts):
            if MARK in t:
                out[i] = 0.0
                out[i, 0] = 1.0
        return out


def _head(identity: str, dim: int = 16) -> DetectorHead:
    weights = np.zeros(dim, dtype=np.float32)
    weights[0] = 20.0
    # the stacker trusts the head alone: logit = head - 10
    return DetectorHead(
        EmbeddingHead(weights, -10.0),
        Stacker(np.array([0.0, 0.0, 1.0, 0.0]), 0.0),
        0.5,
        Stacker(np.array([1.0, 0.0]), 0.0),
        0.9,
        (identity,),
    )


def _memory(tmp_path: Path, config: Config, identity: str | None) -> tuple[Memory, CountingEmbedder]:
    embedder = CountingEmbedder()
    m = Memory(tmp_path / "m.db", embedder=embedder, config=config)
    head = _head(identity or embedder.identity)
    m._guard.detector = CombinedDetector(ClassifierModel.load(), head=head)
    return m, embedder


def test_the_head_reads_the_vectors_the_write_stores_each_embedded_once(tmp_path: Path, config: Config) -> None:
    m, embedder = _memory(tmp_path, config, None)
    with m:
        embedder.seen.clear()
        added = m.add(["the pelican flew over the harbour", "we had soup for lunch"], user_id="ana")
        flagged = {f.memory.id for f in m.flagged(user_id="ana")}
        assert flagged == {added.items[0].id}  # only the head could say so: no rule or n-gram knows "pelican"
        assert [embedder.seen.count(it.text) for it in added.items] == [1, 1]  # embedded once each


def test_a_head_for_another_embedder_is_not_used(tmp_path: Path, config: Config) -> None:
    m, embedder = _memory(tmp_path, config, "some-other-model")
    with m:
        embedder.seen.clear()
        m.add(["the pelican flew over the harbour"], user_id="ana")
        assert m.flagged(user_id="ana") == []
        assert embedder.seen.count("the pelican flew over the harbour") == 1


def test_vector_memo_gives_each_vector_once_and_stays_bounded() -> None:
    memo = VectorMemo(limit=2)
    memo.put(["a", "b", "c"], np.eye(3, dtype=np.float32))
    assert set(memo.take(["a", "b", "c"])) == {"b", "c"}  # "a" was evicted
    assert memo.take(["b"]) == {}


def test_head_file_round_trips_and_a_broken_one_is_a_config_error(tmp_path: Path) -> None:
    head = _head("x")
    head.save(tmp_path / "h.npz")
    back = DetectorHead.load(tmp_path / "h.npz")
    assert back.identities == ("x",) and back.threshold == 0.5 and back.plain_threshold == 0.9
    assert np.array_equal(back.head.weights, head.head.weights)
    (tmp_path / "bad.npz").write_bytes(b"nope")
    with pytest.raises(ConfigError, match="embedding head"):
        DetectorHead.load(tmp_path / "bad.npz")


def test_shipped_head_reads_minilm_at_most_and_its_thresholds_are_in_range() -> None:
    head = DetectorHead.load()  # enabled only when it beat the n-gram path leaving sources out (see security.md)
    assert all("MiniLM" in i for i in head.identities)
    assert head.head.weights.shape == (384,)
    assert head.plain_stacker.coef[1] <= 0.0  # length never raises the score
    assert 0.0 < head.threshold <= 1.0 and 0.0 < head.plain_threshold <= 1.0
