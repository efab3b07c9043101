"""Invariants of the fusion functions: permutation invariance, monotonicity, bounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.retrieval.fusion import BLEND, CONVEX, RRF, WEIGHTED, FusionSpec, fuse, minmax, ranks

SPECS = [WEIGHTED, CONVEX, RRF, BLEND]
keys = st.sampled_from([f"m{i}" for i in range(12)])
score = st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False)
unit = st.floats(min_value=0, max_value=1, allow_nan=False)


@st.composite
def signals(draw: st.DrawFn) -> dict[str, dict[str, float]]:
    dense = draw(st.dictionaries(keys, st.floats(-1, 1, allow_nan=False), min_size=1))
    lexical = draw(st.dictionaries(keys, st.floats(0, 30, allow_nan=False)))
    pool = set(dense) | set(lexical)
    return {
        "dense": dense,
        "lexical": lexical,
        "recency": {k: draw(unit) for k in sorted(pool)},
        "importance": {k: draw(unit) for k in sorted(pool)},
    }


def _scores(sig: dict[str, dict[str, float]], spec: FusionSpec) -> dict[str, float]:
    return {f.key: f.score for f in fuse(sig, spec)}


@pytest.mark.parametrize("spec", SPECS)
@given(sig=signals(), data=st.data())
def test_permutation_invariance(spec: FusionSpec, sig, data) -> None:
    shuffled = {d: dict(data.draw(st.permutations(list(v.items())))) for d, v in sig.items()}
    assert _scores(sig, spec) == pytest.approx(_scores(shuffled, spec))
    assert [f.key for f in fuse(sig, spec)] == [f.key for f in fuse(shuffled, spec)]


@pytest.mark.parametrize("spec", SPECS)
@given(sig=signals())
def test_bounds_and_breakdown_sum(spec: FusionSpec, sig) -> None:
    fused = fuse(sig, spec)
    assert len({f.key for f in fused}) == len(fused)
    top = sum(spec.weights.values()) * (1.0 if spec.method == "weighted" else 1.0 / (spec.rrf_k + 1))
    for f in fused:
        assert -1e-9 <= f.score <= top + 1e-9
        assert f.score == pytest.approx(sum(b.contribution for b in f.breakdown.values()))
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)


@pytest.mark.parametrize("spec", [WEIGHTED, CONVEX, RRF])
@given(sig=signals(), data=st.data())
def test_raising_one_signal_never_lowers_that_items_rank(spec: FusionSpec, sig, data) -> None:
    key = data.draw(st.sampled_from(sorted(sig["dense"])))
    before = [f.key for f in fuse(sig, spec)].index(key)
    boosted = {d: dict(v) for d, v in sig.items()}
    boosted["dense"][key] = max(sig["dense"].values()) + data.draw(st.floats(0, 1, allow_nan=False))
    after = [f.key for f in fuse(boosted, spec)].index(key)
    assert after <= before


@given(st.dictionaries(keys, score, min_size=1))
def test_minmax_limits(scores) -> None:
    normed = minmax(scores)
    assert set(normed) == set(scores)
    assert all(0.0 <= v <= 1.0 for v in normed.values())
    lo, hi = min(scores.values()), max(scores.values())
    # a spread gives a top item; all-equal scores have no range to scale by and keep their raw value, clipped
    assert max(normed.values()) == (1.0 if hi - lo > 1e-12 else min(max(hi, 0.0), 1.0))


def test_rrf_known_values() -> None:
    sig = {"dense": {"a": 0.9, "b": 0.5}, "lexical": {"b": 3.0, "c": 1.0}}
    got = {f.key: f.score for f in fuse(sig, FusionSpec("rrf", {"dense": 1.0, "lexical": 1.0}))}
    assert got == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})


def test_convex_known_values() -> None:
    sig = {"dense": {"a": 0.9, "b": 0.5, "c": 0.1}, "lexical": {"a": 0.0, "b": 4.0, "c": 2.0}}
    got = {f.key: f.score for f in fuse(sig, CONVEX)}
    assert got == pytest.approx({"a": 0.7, "b": 0.7 * 0.5 + 0.3, "c": 0.15})


def test_invalid_specs() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        FusionSpec("weighted", {"dense": -1.0})
    with pytest.raises(ValueError, match="method"):
        FusionSpec("median", {"dense": 1.0})  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", [WEIGHTED, CONVEX, BLEND])
@given(sig=signals(), limit=st.one_of(st.none(), st.integers(1, 12)))
def test_breakdown_ranks_are_the_dimensions_own_ranks(spec: FusionSpec, sig, limit) -> None:
    tied = {d: {k: round(v, 1) for k, v in s.items()} for d, s in sig.items()}  # coarse scores: many ties
    for case in (sig, tied):
        own = {d: ranks(s) for d, s in case.items()}
        for f in fuse(case, spec, limit):
            for dim, part in f.breakdown.items():
                if dim in own:
                    assert part.rank == own[dim][f.key]
