"""The injection bench: Wilson intervals, the split and insertion rules, evaluation counts, and the CLI over real data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.bench.injection import evaluate, markdown, wilson
from memlane.bench.injection_data import Sample, insert_attack, split_of
from memlane.cli.app import app
from memlane.security.detect import Verdict

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "injection"


def test_wilson_interval_matches_known_values() -> None:
    low, high = wilson(45, 50)
    assert low == pytest.approx(0.7864, abs=1e-3) and high == pytest.approx(0.9565, abs=1e-3)
    assert wilson(0, 20)[0] == 0.0 and wilson(0, 20)[1] == pytest.approx(0.1611, abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0)


def test_split_is_stable_and_roughly_sixty_twenty_twenty() -> None:
    keys = [f"text {i}" for i in range(3000)]
    splits = [split_of(k) for k in keys]
    assert splits == [split_of(k) for k in keys]
    share = {s: splits.count(s) / len(splits) for s in ("train", "val", "dev")}
    assert 0.55 < share["train"] < 0.65 and 0.15 < share["val"] < 0.25 and 0.15 < share["dev"] < 0.25


def test_attacks_go_at_the_start_a_boundary_near_the_middle_or_the_end() -> None:
    context = "First sentence here. Second one is here. Third one closes it."
    assert insert_attack(context, "ATTACK", "start") == f"ATTACK\n{context}"
    assert insert_attack(context, "ATTACK", "end") == f"{context}\nATTACK"
    middle = insert_attack(context, "ATTACK", "middle")
    assert middle == "First sentence here.\nATTACK\n Second one is here. Third one closes it."  # cut 21 is nearest 30


class _Keyword:
    name = "keyword"

    def scan(self, texts: Sequence[str]) -> list[Verdict]:
        return [Verdict(1.0 if "evil" in t else 0.0, "evil" in t) for t in texts]


def test_evaluation_counts_flags_per_subset_and_pools_them() -> None:
    samples = [
        Sample("evil plan", 1, "direct", "dev"),
        Sample("nice plan", 1, "direct", "dev"),
        Sample("evil word in a chat", 0, "locomo-turns", "dev"),
        Sample("hello", 0, "locomo-turns", "dev"),
        Sample("hi", 0, "locomo-turns", "dev"),
    ]
    ev = evaluate(_Keyword(), samples, "dev")
    rows = {(r.subset, r.label): (r.n, r.flagged) for r in ev.rows}
    assert rows == {("direct", 1): (2, 1), ("locomo-turns", 0): (3, 1)}
    assert ev.pooled(1).rate == 0.5 and ev.pooled(0).rate == pytest.approx(1 / 3)
    table = markdown(ev, "memlane bench injection", "0.1 0.1 0.1")
    assert "| direct | injection | 2 | 1 | recall 0.500 |" in table and "ms" in table


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_dir(), reason="the labelled injection data (../shared/data/injection) is not here")
def test_cli_measures_the_shipped_detector_on_val(tmp_path: Path) -> None:
    out = tmp_path / "val.json"
    result = CliRunner().invoke(app, ["bench", "injection", "--data", str(DATA), "--split", "val", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["split"] == "val" and report["fpr"] <= 0.05 and report["recall"] > 0.5
