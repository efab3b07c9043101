"""The telemetry seam: silent until a recorder is installed, then one record per operation with its outcome."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import Config, Memory, telemetry
from memlane.embedding.fake import HashEmbedder
from memlane.errors import ValidationError


class Collect:
    def __init__(self) -> None:
        self.seen: list[tuple[str, float, str | None]] = []

    def record(self, op: str, seconds: float, error: str | None) -> None:
        self.seen.append((op, seconds, error))


@pytest.fixture
def rec() -> Iterator[Collect]:
    c = Collect()
    telemetry.add_recorder(c)
    yield c
    telemetry.remove_recorder(c)


def test_disabled_by_default_and_after_removal():
    assert not telemetry.enabled()
    c = Collect()
    telemetry.add_recorder(c)
    assert telemetry.enabled()
    telemetry.remove_recorder(c)
    assert not telemetry.enabled()


def test_operations_are_recorded_with_outcome(rec, tmp_path: Path):
    config = Config(data_dir=tmp_path, embedder="hash", infer=False, background_worker=False)
    with Memory(":memory:", embedder=HashEmbedder(), config=config) as m:
        m.add(["I adopted a beagle called Biscuit"], user_id="ana")
        m.search("beagle", user_id="ana")
        m.context("beagle", user_id="ana")
        with pytest.raises(ValidationError):
            m.search("", user_id="ana")
    ops = [(op, err) for op, _, err in rec.seen]
    assert ("add", None) in ops
    assert ops.count(("search", None)) == 2  # its own, and the one context runs
    assert ("context", None) in ops
    assert ("search", "ValidationError") in ops
    assert all(s >= 0 for _, s, _ in rec.seen)


def test_extraction_job_is_recorded(rec, tmp_path: Path):
    config = Config(data_dir=tmp_path, embedder="hash", infer=True, background_worker=False)
    with Memory(":memory:", embedder=HashEmbedder(), config=config) as m:
        job = m.add(["I moved to Denver last year"], user_id="ana", async_mode=True).job_id
        assert job is not None
        m.wait(job, user_id="ana", timeout=60)
    assert ("extract_job", None) in [(op, err) for op, _, err in rec.seen]


def test_a_failing_recorder_does_not_break_the_operation(tmp_path: Path, caplog):
    class Broken:
        def record(self, op: str, seconds: float, error: str | None) -> None:
            raise RuntimeError("boom")

    b = Broken()
    telemetry.add_recorder(b)
    try:
        with Memory(":memory:", embedder=HashEmbedder(), config=Config(data_dir=tmp_path, infer=False)) as m:
            m.add(["hello there"], user_id="u")
            assert m.search("hello", user_id="u")
    finally:
        telemetry.remove_recorder(b)
    assert "telemetry recorder" in caplog.text


def test_unknown_operation_name_is_refused():
    with pytest.raises(ValueError, match="unknown operation"):
        telemetry.timed("serach")


def test_spans_through_opentelemetry(tmp_path: Path):
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the span test needs opentelemetry-sdk")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable_tracing(provider)
    try:
        with Memory(":memory:", embedder=HashEmbedder(), config=Config(data_dir=tmp_path, infer=False)) as m:
            m.add(["I adopted a beagle"], user_id="u")
            m.context("beagle", user_id="u")
    finally:
        telemetry.disable_tracing()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert {"memlane.add", "memlane.search", "memlane.context"} <= set(spans)
    search, context = spans["memlane.search"], spans["memlane.context"]
    assert search.parent is not None and search.parent.span_id == context.context.span_id
    assert not telemetry.enabled()


def test_an_hnsw_build_is_recorded(rec):
    import numpy as np

    from memlane.store.ann.hnsw import HnswVectors
    from memlane.store.ann.types import IndexSettings

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    built = HnswVectors.build(16, IndexSettings(exact_below=200, expansion_search=64), np.arange(300), vectors)
    assert built is not None
    assert [(op, err) for op, _, err in rec.seen] == [("index_build", None)]
