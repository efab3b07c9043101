"""``convex@W``: the convex preset with a keyword weight of the user's choosing, and the bench table of the weights
at or above both baselines (a tiny fixture of our own and the hash embedder: the harness, never a quality claim)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane.bench.docs import run_docs
from memlane.bench.docs_windows import sweep_presets, weight_windows
from memlane.config import preset, save_preset
from memlane.engine import Memory
from memlane.errors import ConfigError
from tests.unit.test_bench_docs import _folder


def test_convex_at_sets_the_keyword_and_dense_weights() -> None:
    p = preset("convex@0.15")
    assert p.name == "convex@0.15" and p.fusion.weights == {"dense": 0.85, "lexical": 0.15}
    assert p.fusion.normalizers == preset("convex").fusion.normalizers
    assert preset("convex@.3").name == "convex@0.3"  # one name per weight
    assert preset("convex@0").fusion.weights == {"dense": 1.0}  # a weight of 0 switches the dimension off
    assert preset("convex@1").fusion.weights == {"lexical": 1.0}


@pytest.mark.parametrize("name", ["convex@", "convex@x", "convex@1.5", "convex@-0.1", "convex@nan", "convex@inf"])
def test_a_weight_outside_0_to_1_is_refused_by_name(name: str) -> None:
    with pytest.raises(ConfigError, match=r"convex@W needs a keyword weight W from 0 to 1"):
        preset(name)


def test_convex_at_ranks_as_the_same_mix_under_its_own_name(memory: Memory) -> None:
    for text in ("The ferry leaves from pier four.", "Pier four is closed on Sundays.", "Tea is steeped hot."):
        memory.add(text, user_id="u1")
    a = [h.memory.id for h in memory.search("ferry pier", user_id="u1", preset_name="convex")]
    b = [h.memory.id for h in memory.search("ferry pier", user_id="u1", preset_name="convex@0.3")]
    assert a == b and a
    with pytest.raises(ConfigError, match="convex@W"):
        memory.search("ferry", user_id="u1", preset_name="convex@2")


def test_a_learned_preset_cannot_take_a_convex_at_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="built-in preset"):
        save_preset(tmp_path / "presets.json", "convex@0.2", "convex", {"dense": 0.8, "lexical": 0.2}, "")


def test_the_sweep_table_names_the_weights_at_or_above_both_baselines(tmp_path: Path) -> None:
    names = sweep_presets([0.0, 0.3, 1.0])
    assert names == ["dense", "convex", "convex@0", "convex@0.3", "convex@1"]
    report = run_docs([_folder(tmp_path / "tiny")], batches=(4,), presets=names, embedder="hash")
    lines = weight_windows(report)
    [row] = [line for line in lines if line.startswith("| tiny |")]
    # convex@0 is dense and convex@0.3 is convex: each ties its own baseline, so both qualify exactly when the other
    # baseline is no better; the table must agree with the scores it reports
    cells = [c.strip() for c in row.strip("|").split("|")]
    dense = tuple(float(x) for x in cells[2].split(" / "))
    convex = tuple(float(x) for x in cells[3].split(" / "))
    listed = set(cells[5].split(", ")) if cells[5] != "none" else set()
    assert ("0" in listed) == (dense[0] >= convex[0] and dense[1] >= convex[1])
    assert ("0.3" in listed) == (convex[0] >= dense[0] and convex[1] >= dense[1])
    assert lines[-1].endswith(f"the default is at or above both (*) on {int(cells[4].endswith('*'))}.")
    assert weight_windows(run_docs([_folder(tmp_path / "t2")], batches=(4,), presets=["dense"], embedder="hash")) == []
