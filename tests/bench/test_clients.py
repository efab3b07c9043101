"""``memlane bench scale --clients``: concurrent client processes against one store, measured and rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane.bench.clients import clients_point, clients_table
from memlane.bench.common import NullTracker
from memlane.bench.scale import ScaleReport, render_scale

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo_dev.json"

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not found beside the repository")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_clients_run_at_once_and_every_turn_is_counted(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_INFER", "0")
    store = None
    if backend == "postgres":
        from tests.pg_server import postgres_url

        store = postgres_url()
    point = clients_point(LOCOMO, None, "hash", 40, 3, 4, store=store, tracker=NullTracker())
    assert (point.clients, point.turns_per_client, point.errors) == (3, 4, 0)
    assert point.seconds > 0 and point.turns_per_s == pytest.approx(12 / point.seconds)
    assert 0 < point.add_p50_ms <= point.add_p95_ms and 0 < point.search_p50_ms <= point.search_p95_ms
    assert point.system == ("memlane (sqlite)" if store is None else "memlane (postgresql)")
    if store is not None:  # what the point wrote is gone
        from memlane import Config, Memory

        with Memory(store, embedder="hash", config=Config(embedder="hash", infer=False)) as m:
            assert m.stats().memories == 0
    report = ScaleReport(machine="test", corpus="", points=[], clients=[point])
    assert clients_table([point])[2] in render_scale(report)
