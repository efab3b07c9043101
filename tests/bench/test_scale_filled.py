"""``memlane bench scale --store URL --filled``: a store that already holds the corpus is measured, and left as found."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from memlane import Config, Memory, Message
from memlane.bench.common import NullTracker
from memlane.bench.corpus import corpus, load_seeds
from memlane.bench.scale import T0, ScalePlan, memlane_point, points_table
from memlane.errors import ConfigError, ValidationError

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo_dev.json"

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not found beside the repository")


def test_a_filled_store_is_searched_without_ingest_and_keeps_its_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_INFER", "0")
    store = f"sqlite:///{tmp_path / 'filled.db'}"
    texts = list(corpus(load_seeds(LOCOMO, None), 60))
    with Memory(store, embedder="hash", config=Config(embedder="hash", infer=False)) as m:
        m.add([Message(role="user", content=t, timestamp=T0 + timedelta(minutes=k)) for k, t in enumerate(texts)],
              user_id="u0", session_id="s0")  # fmt: skip
        before = sorted(it.id for it in m.list(user_id="u0", limit=100))
    point = memlane_point(LOCOMO, None, "hash", 60, 1, 5, None, store, "u0", tracker=NullTracker())
    assert point.ingest_seconds == 0 and point.queries == 5 and point.chat_queries == 5
    assert point.search_p50_ms > 0 and point.chat_add_p50_ms > 0
    assert "– (filled)" in points_table([point])[2]
    with Memory(store, embedder="hash", config=Config(embedder="hash", infer=False)) as m:
        assert sorted(it.id for it in m.list(user_id="u0", limit=100)) == before  # the chat turns went again
    with pytest.raises(ValidationError, match="user 'u0' of the bench store holds 60 memories, not 70"):
        memlane_point(LOCOMO, None, "hash", 70, 1, 5, None, store, "u0", tracker=NullTracker())


def test_filled_needs_a_store_and_one_point() -> None:
    url = "postgresql://x"
    with pytest.raises(ConfigError, match="--filled"):
        ScalePlan.build(sizes=[1000], embedders=["static"], users=[1], filled="u")
    with pytest.raises(ConfigError, match="--filled"):
        ScalePlan.build(sizes=[1000, 2000], embedders=["static"], users=[1], store=url, filled="u")
    with pytest.raises(ConfigError, match="--filled"):
        ScalePlan.build(sizes=[1000], embedders=["static"], users=[1, 1000], store=url, filled="u")
    assert ScalePlan.build(sizes=[1000], embedders=["static"], users=[1], store=url, filled="u").filled == "u"
