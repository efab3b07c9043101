"""Exact search pre-selecting from an int8 copy returns exactly what the float32 product returns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import memlane.store.ann.exact as exact_mod
from memlane.store.ann.exact import ExactVectors, top_positions

DIM = 384


def _anisotropic(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors clustered around one direction (as the static embedder's are): scores crowd together."""
    raw = rng.normal(size=(n, DIM)) + 3 * rng.normal(size=DIM)
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def _float32_top(vectors: ExactVectors, q: np.ndarray, k: int) -> tuple[list[int], np.ndarray]:
    """The k best by float32 inner product, ties by key; each row summed the same way wherever it sits (BLAS's
    matrix-vector kernels give two equal rows different last bits by their place in a block of rows).
    """
    scores = np.einsum("ij,j->i", vectors.matrix, q)
    order = top_positions(scores, k, vectors.keys)
    return vectors.keys[order].tolist(), scores[order]


@pytest.mark.parametrize("first_pass", [2, 1])  # 1: the second pass finds a row missed by the first most times
@pytest.mark.parametrize("n", [5_000, 12_000])
def test_int8_preselection_returns_the_float32_top_k(n: int, first_pass: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_mod, "FIRST_PASS", first_pass)
    rng = np.random.default_rng(n)
    vecs = _anisotropic(rng, n)
    vecs[1::97] = vecs[0]  # many exact ties at one score: ordered by key, as the float32 search orders them
    keys = rng.permutation(4 * n)[:n].astype(np.int64)
    index = ExactVectors(DIM, keys, vecs)
    assert n >= exact_mod.CODED_FROM
    for _ in range(40):
        q = vecs[rng.integers(n)] + rng.normal(0, 0.05, DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        for k in (1, 10, 50):
            got_keys, got_scores = index.search(q, k)
            want_keys, want_scores = _float32_top(index, q, k)
            assert got_keys.tolist() == want_keys
            np.testing.assert_allclose(got_scores, want_scores, rtol=0, atol=1e-6)


def test_a_kernel_that_gets_an_integer_product_wrong_falls_back_to_the_float32_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    vecs = _anisotropic(rng, 6_000)
    index = ExactVectors(DIM, np.arange(6_000, dtype=np.int64), vecs)
    q = vecs[7]
    calls: list[bool] = []
    preselect = index._preselect

    def spy(query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        found = preselect(query, k)
        calls.append(found is None)
        return found

    real_cdist = exact_mod.numkong.cdist

    def off_by_one(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
        return np.asarray(real_cdist(a, b, metric), dtype=np.float64) + 1.0

    monkeypatch.setattr(index, "_preselect", spy)
    monkeypatch.setattr(exact_mod.numkong, "cdist", off_by_one)
    got_keys, _ = index.search(q, 20)
    assert calls == [True]
    assert got_keys.tolist() == _float32_top(index, q, 20)[0]


def test_a_query_that_cannot_be_coded_is_searched_in_float32() -> None:
    rng = np.random.default_rng(4)
    vecs = _anisotropic(rng, 5_000)
    index = ExactVectors(DIM, np.arange(5_000, dtype=np.int64), vecs)
    zero = np.zeros(DIM, dtype=np.float32)
    assert index._preselect(zero, 10) is None
    got_keys, got_scores = index.search(zero, 10)
    assert got_keys.tolist() == list(range(10))  # all scores 0: the lowest keys
    assert not got_scores.any()


def test_the_preselection_reads_a_few_percent_of_the_rows() -> None:
    # The point of the codes: on vectors crowded around one direction, only the rows near the k-th score are
    # scored again in float32 (centring is what makes the codes fine enough for that). The floor is the k-th best
    # float32 score of the 2k best rough ones, so about 2k rows and a few more are read (the floor taken from the
    # bounds alone read about 340 here).
    rng = np.random.default_rng(5)
    vecs = _anisotropic(rng, 10_000)
    index = ExactVectors(DIM, np.arange(10_000, dtype=np.int64), vecs)
    sizes = []
    for _ in range(20):
        q = vecs[rng.integers(10_000)] + rng.normal(0, 0.05, DIM).astype(np.float32)
        found = index._preselect(q / np.linalg.norm(q), 50)
        assert found is not None
        sizes.append(len(found[0]))
    assert np.median(sizes) < 200, sizes


@settings(max_examples=40, deadline=None)
@example(steps=[("add", 0, 1), ("add", 0, 1), ("replace", 55, 1), ("add", 203, 1), ("search", 240, 1)])  # equal vectors
@example(steps=[("bulk", 1, 1), ("search", 7, 3), ("bulk", 2, 1), ("code", 0, 1), ("search", 7, 3), ("add", 3, 1)])
@example(  # a removal moves a row added uncoded into a coded row's place: code_all must code it there
    steps=[("add", 0, 1), ("bulk", 1, 1), ("remove", 2, 1), ("code", 0, 1)] + [("search", s, 3) for s in range(8)]
)
@example(  # equal vectors (a replaced key takes the row of another key) searched before code_all
    steps=[("add", 0, 1)] * 4
    + [("add", 6, 1), ("remove", 0, 1), ("add", 1, 1), ("add", 0, 1), ("replace", 1, 1), ("bulk", 0, 1)]
    + [("search", 171, 5)]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["add", "replace", "remove", "search", "bulk", "code"]),
            st.integers(0, 10_000),
            st.integers(1, 12),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_the_int8_copy_follows_every_write(steps: list[tuple[str, int, int]]) -> None:
    # A small switch-over size so that every search goes through the int8 copy after adds, replacements and
    # removals (a removal moves the last row into the hole: the codes must move with it).
    original = exact_mod.CODED_FROM
    exact_mod.CODED_FROM = 8
    try:
        rng = np.random.default_rng(len(steps))
        pool = _anisotropic(rng, 300)
        index = ExactVectors(DIM)
        for op, seed, k in steps:
            r = np.random.default_rng(seed)
            if op in ("add", "replace", "bulk"):
                chosen = r.choice(200, size=40, replace=False).astype(np.int64)
                rows = (chosen + (100 if op == "replace" else 0)) % 300
                index.add(chosen, pool[rows], code=op != "bulk")  # a bulk load codes nothing until "code"
            elif op == "code":
                index.code_all()
            elif op == "remove":
                index.remove(r.choice(200, size=15, replace=False).astype(np.int64))
            elif 0 < k < len(index) // 4:  # the int8 path (the others are the plain float32 product)
                q = pool[seed % 300]
                got_keys, got_scores = index.search(q, k)
                want_keys, want_scores = _float32_top(index, q, k)
                np.testing.assert_allclose(got_scores, want_scores, rtol=0, atol=1e-6)
                if index._uncoded:
                    # Searched by the plain matrix product until code_all: BLAS may give two equal rows different
                    # last bits by their place, so equal vectors can tie in either order; each key found must
                    # still score what the search says it does.
                    exact = np.einsum("ij,j->i", index.matrix[index.positions(got_keys)], q)
                    np.testing.assert_allclose(exact, got_scores, rtol=0, atol=1e-6)
                    continue
                assert got_keys.tolist() == want_keys
                n = len(index)
                centred = (index.matrix - index._centre).astype(np.float64)
                decoded = index._codes[:n] * index._scale[:n, None]
                np.testing.assert_allclose(index._residual[:n], np.linalg.norm(centred - decoded, axis=1), atol=1e-12)
                np.testing.assert_allclose(index._coded[:n], np.linalg.norm(decoded, axis=1), atol=1e-12)
    finally:
        exact_mod.CODED_FROM = original


def _count_coded_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the blocks of rows ``ExactVectors`` codes from now on (appended as they are coded)."""
    coded: list[int] = []
    real = ExactVectors._encode_block

    def counted(self: ExactVectors, rows: object) -> None:
        coded.append(len(self._buf[rows]))  # type: ignore[index]
        real(self, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(ExactVectors, "_encode_block", counted)
    return coded


def test_rows_appended_below_the_first_uncoded_row_are_coded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Removals can take the rows held below the first row added uncoded; rows appended after that start lower
    and must be coded by ``code_all`` too.
    """
    monkeypatch.setattr(exact_mod, "CODED_FROM", 8)
    rng = np.random.default_rng(13)
    pool = _anisotropic(rng, 200)
    index = ExactVectors(DIM)
    index.add(np.arange(40, dtype=np.int64), pool[:40])  # coded (and centred)
    index.add(np.arange(40, 80, dtype=np.int64), pool[40:80], code=False)  # rows 40-79, uncoded
    index.remove(np.arange(30, 80, dtype=np.int64))  # 30 rows left, all coded
    index.add(np.arange(100, 120, dtype=np.int64), pool[100:120], code=False)  # rows 30-49, uncoded
    index.code_all()
    n = len(index)
    centred = (index.matrix - index._centre).astype(np.float64)
    decoded = index._codes[:n] * index._scale[:n, None]
    np.testing.assert_allclose(index._residual[:n], np.linalg.norm(centred - decoded, axis=1), atol=1e-12)
    np.testing.assert_allclose(index._coded[:n], np.linalg.norm(decoded, axis=1), atol=1e-12)


def test_a_bulk_load_codes_each_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild adds batches inside ``VectorIndex.deferred()``: the int8 copy is coded once at its end (adding
    batch by batch coded the rows of each batch and again at every doubling), and searches give the same results.
    """
    from memlane.store.ann import IndexSettings, VectorIndex

    rng = np.random.default_rng(9)
    vecs = _anisotropic(rng, 20_000)
    coded = _count_coded_rows(monkeypatch)
    bulk = VectorIndex(DIM, "test", IndexSettings(exact_below=50_000))
    with bulk.deferred():
        for lo in range(0, 20_000, 5_000):
            bulk.add(np.arange(lo, lo + 5_000, dtype=np.int64), vecs[lo : lo + 5_000])
            assert sum(coded) == 0
    assert sum(coded) == 20_000
    coded.clear()
    one_by_one = VectorIndex(DIM, "test", IndexSettings(exact_below=50_000))
    for lo in range(0, 20_000, 5_000):
        one_by_one.add(np.arange(lo, lo + 5_000, dtype=np.int64), vecs[lo : lo + 5_000])
    assert sum(coded) > 20_000  # 5k, 10k (re-centred), 15k, 20k (re-centred): 45k rows
    for i in range(0, 20_000, 997):
        assert [(h.key, h.score) for h in bulk.search(vecs[i], 10)] == [
            (h.key, h.score) for h in one_by_one.search(vecs[i], 10)
        ]


def test_a_small_write_in_a_deferred_block_codes_its_own_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replayed change (a chat turn's vector, applied from the feed) runs inside ``deferred()``: it must not
    centre and code the whole matrix again (it did: 10,000 rows coded per one-message add, 23 ms of a 28 ms add).
    """
    from memlane.store.ann import IndexSettings, VectorIndex

    rng = np.random.default_rng(12)
    vecs = _anisotropic(rng, 10_003)
    index = VectorIndex(DIM, "test", IndexSettings(exact_below=50_000))
    with index.deferred():
        index.add(np.arange(10_000, dtype=np.int64), vecs[:10_000])
    coded = _count_coded_rows(monkeypatch)
    with index.deferred():
        index.add(np.array([10_000], dtype=np.int64), vecs[10_000:10_001])
    with index.deferred():  # a replacement and a new row
        index.add(np.array([5, 10_001], dtype=np.int64), vecs[10_001:10_003])
    with index.deferred():
        index.remove([7])
    assert sum(coded) == 3
    for i in (0, 5, 10_000, 10_001):
        q = vecs[i] + rng.normal(0, 0.05, DIM).astype(np.float32)
        got = [(h.key, h.score) for h in index.search(q, 10)]
        held = index._exact
        assert held is not None
        want_keys, want_scores = _float32_top(held, q, 10)
        assert [k for k, _ in got] == want_keys
        np.testing.assert_allclose([s for _, s in got], want_scores, rtol=0, atol=1e-6)


def test_adopted_arrays_are_used_in_place_and_others_copied() -> None:
    rng = np.random.default_rng(11)
    vecs = _anisotropic(rng, 5_000)
    keys = np.arange(5_000, dtype=np.int64)
    adopted = ExactVectors(DIM, keys, vecs, coded=False, adopt=True)
    assert np.shares_memory(adopted.matrix, vecs) and not np.shares_memory(ExactVectors(DIM, keys, vecs).matrix, vecs)
    frozen = vecs.copy()
    frozen.flags.writeable = False
    assert not np.shares_memory(ExactVectors(DIM, keys, frozen, adopt=True).matrix, frozen)  # a read-only one: copied
    adopted.add(np.array([9_999], dtype=np.int64), vecs[:1])  # grows into a buffer of its own
    assert len(adopted) == 5_001 and adopted.search(vecs[0], 2)[0].tolist() == [0, 9_999]
