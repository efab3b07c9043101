"""Pure functions of the context and session dimensions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.retrieval.context import context_scores, session_scores


def test_context_is_the_best_neighbour_damped_by_distance() -> None:
    where = {"a": ("s", 0), "b": ("s", 1), "c": ("s", 2), "x": ("t", 1)}
    base = {"a": 0.2, "b": 0.0, "c": 0.9, "x": 1.0}
    ctx = context_scores(base, where, width=2)
    assert ctx["b"] == pytest.approx(0.9)  # c is next to b
    assert ctx["a"] == pytest.approx(0.9 * 2**-0.5)  # c is two away from a
    assert ctx["c"] == pytest.approx(0.2 * 2**-0.5)  # its own score does not count
    assert ctx["x"] == 0.0  # another session is never a neighbour


def test_width_zero_switches_context_off() -> None:
    assert context_scores({"a": 1.0}, {"a": ("s", 0)}, width=0) == {}


def test_session_score_is_the_mean_of_its_best_three() -> None:
    where = {k: ("s", i) for i, k in enumerate("abcd")} | {"z": ("t", 0)}
    base = {"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.3, "z": 0.6}
    scores = session_scores(base, where)
    assert scores["a"] == scores["c"] == pytest.approx((1.0 + 0.5 + 0.3) / 3)
    assert scores["z"] == pytest.approx(0.6)


@given(
    st.dictionaries(st.integers(0, 30), st.floats(0, 1), min_size=1, max_size=30),
    st.integers(1, 3),
)
def test_context_is_bounded_by_the_best_base_score(positions: dict[int, float], width: int) -> None:
    where = {f"m{p}": ("s", p) for p in positions}
    base = {f"m{p}": v for p, v in positions.items()}
    ctx = context_scores(base, where, width)
    assert set(ctx) == set(where)
    assert all(0.0 <= v <= max(base.values()) + 1e-12 for v in ctx.values())


@given(
    st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=3),
        st.tuples(st.sampled_from([None, "s", "t", "u"]), st.integers(0, 30)),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 0.3333333333333333, 0.1]), min_size=40, max_size=40),
    st.integers(1, 4),
)
def test_session_score_equals_its_definition_exactly(
    where: dict[str, tuple[str | None, int]], values: list[float], top: int
) -> None:
    base = {k: v for (k, v) in zip(where, values, strict=False) if v != 0.1}  # 0.1 stands for "no base score"
    by_session: dict[str | None, list[float]] = {}
    for mid, (session, _) in where.items():
        by_session.setdefault(session, []).append(base.get(mid, 0.0))
    strength = {s: sum(sorted(v, reverse=True)[:top]) / min(top, len(v)) for s, v in by_session.items()}
    assert session_scores(base, where, top) == {mid: strength[s] for mid, (s, _) in where.items()}
