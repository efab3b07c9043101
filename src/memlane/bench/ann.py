"""``memlane bench ann``: vector-index candidates (exact numpy, usearch, hnswlib, faiss) compared on real vectors.

The corpus is the scale bench's (LoCoMo and MemoryBank turns with variations, ``memlane.bench.corpus``) embedded
with an embedder of memlane (``static`` by default), the queries real LoCoMo/MemoryBank questions embedded the same
way. Embedded vectors are cached as ``.npy`` under ``cache`` (the corpus is prefix-stable, so one 1M file serves every
smaller size). Each candidate is built in batch on all but the last ``ONE_BY_ONE`` vectors, which are then added one
at a time; recall@10 is against exact search over the same vectors; searches are single queries on one thread.
The libraries are optional: a candidate whose library is not installed is skipped with a note.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from memlane.bench.common import Tracker
from memlane.bench.corpus import corpus, load_seeds, queries
from memlane.bench.metrics import percentile
from memlane.embedding import make_embedder

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
K = 10
#: Vectors added one at a time (after a batch build of the rest), and removed one at a time afterwards.
ONE_BY_ONE = 500
#: Fractions of the scope a filter allows.
FILTERS: tuple[float, ...] = (0.01, 0.10)


class AnnRow(BaseModel):
    """One candidate at one size and one search setting."""

    size: int
    candidate: str
    params: str
    recall_at_10: float
    p50_ms: float
    p95_ms: float
    build_s: float = 0.0
    batch_per_s: float = 0.0
    one_add_ms: float = 0.0
    one_remove_ms: float = 0.0
    memory_mb: float = 0.0
    file_mb: float = 0.0
    load_ms: float = 0.0
    filter_1pct: str = ""
    filter_10pct: str = ""
    note: str = ""


#: Corpus vectors are embedded and cached in chunks of this many texts, so that a long run can be resumed.
CHUNK = 50_000


def embedded(
    locomo: Path, memorybank: Path | None, size: int, n_queries: int, embedder: str, cache: Path
) -> tuple[F32, F32]:
    """``size`` corpus vectors and ``n_queries`` query vectors, embedding only the chunks not cached yet."""
    cache.mkdir(parents=True, exist_ok=True)
    seeds = load_seeds(locomo, memorybank)
    model = make_embedder(embedder)
    qfile = cache / f"{embedder}-queries-{n_queries}.npy"
    if qfile.exists():
        qv = np.load(qfile)
    else:
        qv = np.stack([model.embed_query(q) for q in queries(seeds, n_queries)]).astype(np.float32)
        np.save(qfile, qv)
    chunks = -(-size // CHUNK)
    texts: list[str] | None = None
    parts = []
    for c in range(chunks):
        f = cache / f"{embedder}-corpus-{c * CHUNK}-{(c + 1) * CHUNK}.npy"
        if not f.exists():
            if texts is None:
                texts = list(corpus(seeds, chunks * CHUNK))
            np.save(f, model.embed(texts[c * CHUNK : (c + 1) * CHUNK]).astype(np.float32))
        parts.append(np.load(f))
    return np.concatenate(parts)[:size], qv


def exact_top(matrix: F32, q: F32, k: int) -> I64:
    """Row positions of the ``k`` best inner products, best first."""
    s = matrix @ q
    if k >= s.size:
        return np.argsort(-s).astype(np.int64)
    part = np.argpartition(-s, k - 1)[:k]
    return part[np.argsort(-s[part])].astype(np.int64)


def recall(found: Sequence[Sequence[int]], truth: Sequence[Sequence[int]]) -> float:
    """Mean overlap of ``found`` with ``truth`` (each truth list of at most K)."""
    hits = [len(set(f[:K]) & set(t[:K])) / max(1, min(K, len(t))) for f, t in zip(found, truth, strict=True)]
    return float(np.mean(hits)) if hits else 0.0


def timed(fn: Callable[[F32], list[int]], qs: F32) -> tuple[list[list[int]], list[float]]:
    """Results and per-query milliseconds of ``fn`` over ``qs``."""
    out, lat = [], []
    for q in qs:
        t0 = time.perf_counter()
        out.append(fn(q))
        lat.append((time.perf_counter() - t0) * 1000)
    return out, lat


@dataclass
class Built:
    """A candidate index built over the corpus: search functions and its costs."""

    search: Callable[[F32, int], list[int]]
    set_ef: Callable[[int], None] | None
    filtered: Callable[[F32, int, I64], list[int]] | None
    build_s: float
    one_add_ms: float
    one_remove_ms: float
    memory_mb: float
    file_mb: float
    load_ms: float
    note: str = ""


def _file_cost(save: Callable[[str], None], load: Callable[[str], object]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="memlane-ann-") as tmp:
        path = os.path.join(tmp, "index.bin")
        save(path)
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp)) / 2**20  # with any file beside
        t0 = time.perf_counter()
        load(path)
        return size, (time.perf_counter() - t0) * 1000


def build_exact(x: F32, extra: F32) -> Built:
    """Exact search over a float32 matrix (amortised appends; removal swaps the last row in)."""
    n = x.shape[0]
    buf = np.empty((n + len(extra), x.shape[1]), dtype=np.float32)
    t0 = time.perf_counter()
    buf[:n] = x
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, v in enumerate(extra):
        buf[n + i] = v
    one_add = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    matrix = buf
    scratch = matrix.copy()
    t0 = time.perf_counter()
    last = scratch.shape[0] - 1
    for i in range(ONE_BY_ONE):
        scratch[i] = scratch[last - i]
    one_remove = (time.perf_counter() - t0) * 1000 / ONE_BY_ONE
    del scratch

    def search(q: F32, k: int) -> list[int]:
        return [int(v) for v in exact_top(matrix, q, k)]

    def filtered(q: F32, k: int, allowed: I64) -> list[int]:
        return [int(v) for v in allowed[exact_top(matrix[allowed], q, k)]]

    fsize, load = _file_cost(lambda p: np.save(open(p, "wb"), matrix), lambda p: np.load(p))  # noqa: SIM115
    return Built(search, None, filtered, build, one_add, one_remove, matrix.nbytes / 2**20, fsize, load)


def build_usearch(x: F32, extra: F32, m: int, ef_c: int, dtype: str) -> Built:
    """The usearch HNSW (inner product); filtered search is exact over the allowed keys' stored vectors."""
    from usearch import index as usearch_index

    Index: Any = usearch_index.Index

    n = x.shape[0]
    index = Index(ndim=x.shape[1], metric="ip", dtype=dtype, connectivity=m, expansion_add=ef_c)
    t0 = time.perf_counter()
    index.add(np.arange(n, dtype=np.uint64), x, threads=2)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, v in enumerate(extra):
        index.add(n + i, v, threads=1)
    one_add = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    t0 = time.perf_counter()
    for i in range(len(extra)):
        index.remove(n + i)
    one_remove = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    index.add(np.arange(n, n + len(extra), dtype=np.uint64), extra, threads=1)  # back, for the same recall set

    def search(q: F32, k: int) -> list[int]:
        return [int(v) for v in index.search(q, k, threads=1).keys]

    def set_ef(ef: int) -> None:
        index.expansion_search = ef

    def filtered(q: F32, k: int, allowed: I64) -> list[int]:
        vecs = np.asarray(index.get(allowed.astype(np.uint64), dtype="f32"))
        return [int(v) for v in allowed[exact_top(vecs, q, k)]]

    fsize, load = _file_cost(lambda p: index.save(p), lambda p: Index.restore(p))
    return Built(search, set_ef, filtered, build, one_add, one_remove, index.memory_usage / 2**20, fsize, load)


#: How many candidates the store's graph is asked for per search: the default preset's dense nominations.
STORE_COUNT = 50


def build_store_graph(x: F32, extra: F32, m: int, ef_c: int, dtype: str) -> Built:
    """The store's own graph (``HnswVectors``: a graph of ``dtype`` rescored from its float32 rows, unless f32),
    searched as the store searches it: ``STORE_COUNT`` candidates, of which the first 10 are scored for recall.
    """
    from memlane.store.ann.hnsw import HnswVectors
    from memlane.store.ann.types import IndexSettings

    n = x.shape[0]
    settings = IndexSettings(connectivity=m, expansion_add=ef_c, graph_dtype=dtype)
    t0 = time.perf_counter()
    graph = HnswVectors.build(x.shape[1], settings, np.arange(n, dtype=np.int64), x)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, v in enumerate(extra):
        graph.add(np.array([n + i], dtype=np.int64), v[None, :])
    one_add = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    t0 = time.perf_counter()
    for i in range(len(extra)):
        graph.remove(np.array([n + i], dtype=np.int64))
    one_remove = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    graph.add(np.arange(n, n + len(extra), dtype=np.int64), extra)  # back, for the same recall set

    def search(q: F32, k: int) -> list[int]:
        return [int(v) for v in graph.search(q, max(k, STORE_COUNT))[0][:k]]

    def set_ef(ef: int) -> None:
        graph.settings = graph.settings.model_copy(update={"expansion_search": ef, "expansion_growth": 0.0})

    def filtered(q: F32, k: int, allowed: I64) -> list[int]:
        present, vecs = graph.vectors_of(allowed)
        return [int(v) for v in present[exact_top(vecs, q, k)]]

    def save(p: str) -> None:
        graph.save(Path(p))

    def load(p: str) -> None:
        rows = HnswVectors.rows_path(Path(p))
        HnswVectors.load(Path(p), x.shape[1], settings, rows if rows.exists() else None)

    fsize, load_ms = _file_cost(save, load)
    rows_mb = 0.0 if dtype == "f32" else (n + len(extra)) * x.shape[1] * 4 / 2**20  # the float32 rows beside
    memory = graph._index.memory_usage / 2**20 + rows_mb
    note = f"count={STORE_COUNT}" + (", rescored in float32" if dtype != "f32" else "")
    return Built(search, set_ef, filtered, build, one_add, one_remove, memory, fsize, load_ms, note)


def build_hnswlib(x: F32, extra: F32, m: int, ef_c: int) -> Built:
    """The hnswlib HNSW (inner product) with its native filter callback; deletes are ``mark_deleted``."""
    hnswlib: Any = importlib.import_module("hnswlib")

    n = x.shape[0]
    index = hnswlib.Index(space="ip", dim=x.shape[1])
    index.init_index(max_elements=n + len(extra), ef_construction=ef_c, M=m, allow_replace_deleted=True)
    index.set_num_threads(2)
    t0 = time.perf_counter()
    index.add_items(x, np.arange(n))
    build = time.perf_counter() - t0
    index.set_num_threads(1)
    t0 = time.perf_counter()
    for i, v in enumerate(extra):
        index.add_items(v[None, :], [n + i])
    one_add = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    t0 = time.perf_counter()
    removed = list(range(n + len(extra) - ONE_BY_ONE, n + len(extra)))
    for key in removed:
        index.mark_deleted(key)
    one_remove = (time.perf_counter() - t0) * 1000 / ONE_BY_ONE
    for key in removed:  # back in, so that recall is measured over the same set as the others
        index.unmark_deleted(key)

    def search(q: F32, k: int) -> list[int]:
        labels, _ = index.knn_query(q, k=k)
        return [int(v) for v in labels[0]]

    def set_ef(ef: int) -> None:
        index.set_ef(ef)

    def filtered(q: F32, k: int, allowed: I64) -> list[int]:
        ok = set(allowed.tolist())
        labels, _ = index.knn_query(q, k=min(k, len(ok)), filter=lambda label: label in ok)
        return [int(v) for v in labels[0]]

    def load(p: str) -> None:
        other = hnswlib.Index(space="ip", dim=x.shape[1])
        other.load_index(p)

    fsize, load_ms = _file_cost(lambda p: index.save_index(p), load)
    return Built(search, set_ef, filtered, build, one_add, one_remove, fsize, fsize, load_ms)


def build_faiss(x: F32, extra: F32, m: int, ef_c: int) -> Built:
    """A faiss ``IndexHNSWFlat`` (inner product) with an ``IDSelectorBatch`` filter; it cannot remove vectors."""
    faiss: Any = importlib.import_module("faiss")

    faiss.omp_set_num_threads(2)
    index = faiss.IndexHNSWFlat(x.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_c
    t0 = time.perf_counter()
    index.add(x)
    build = time.perf_counter() - t0
    faiss.omp_set_num_threads(1)
    t0 = time.perf_counter()
    for v in extra:
        index.add(v[None, :])
    one_add = (time.perf_counter() - t0) * 1000 / max(1, len(extra))
    params = faiss.SearchParametersHNSW()

    def search(q: F32, k: int) -> list[int]:
        _, labels = index.search(q[None, :], k, params=params)
        return [int(v) for v in labels[0]]

    def set_ef(ef: int) -> None:
        params.efSearch = ef

    def filtered(q: F32, k: int, allowed: I64) -> list[int]:
        p = faiss.SearchParametersHNSW(sel=faiss.IDSelectorBatch(allowed), efSearch=params.efSearch)
        _, labels = index.search(q[None, :], k, params=p)
        return [int(v) for v in labels[0] if v >= 0]

    fsize, load = _file_cost(lambda p: faiss.write_index(index, p), faiss.read_index)
    return Built(search, set_ef, filtered, build, one_add, 0.0, fsize, fsize, load, note="no removal in IndexHNSWFlat")


def build_sqlite_vec(x: F32, extra: F32) -> Built:
    """sqlite-vec's ``vec0`` table (exact KNN inside SQLite), loaded through apsw: stdlib sqlite3 here cannot."""
    apsw: Any = importlib.import_module("apsw")
    sqlite_vec: Any = importlib.import_module("sqlite_vec")
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{x.shape[1]}] distance_metric=cosine)")
    n = x.shape[0]
    t0 = time.perf_counter()
    with con:
        con.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)", ((i, x[i].tobytes()) for i in range(n)))
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, v in enumerate(extra):
        con.execute("INSERT INTO v(rowid, embedding) VALUES (?, ?)", (n + i, v.tobytes()))
    one_add = (time.perf_counter() - t0) * 1000 / max(1, len(extra))

    def search(q: F32, k: int) -> list[int]:
        return [
            int(r[0]) for r in con.execute("SELECT rowid FROM v WHERE embedding MATCH ? AND k = ?", (q.tobytes(), k))
        ]

    return Built(search, None, None, build, one_add, 0.0, 0.0, 0.0, 0.0, note="exact scan; needs apsw")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def candidates(
    size: int, only: Sequence[str] | None, m: int = 32, ef_c: int = 200
) -> list[tuple[str, str, Callable[[F32, F32], Built]]]:
    """``(name, params, builder)`` of every candidate measured at ``size`` (HNSW ones with ``m`` and ``ef_c``)."""
    out: list[tuple[str, str, Callable[[F32, F32], Built]]] = [("exact-f32", "numpy", build_exact)]
    if _installed("usearch"):
        for dt in ("f32", "f16", "i8"):
            out.append(
                (f"usearch-{dt}", f"M={m} ef_c={ef_c}", lambda x, e, d=dt: build_usearch(x, e, m, ef_c, d))  # type: ignore[misc]
            )
        for dt in ("f32", "f16", "bf16"):
            out.append(
                (f"memlane-{dt}", f"M={m} ef_c={ef_c}", lambda x, e, d=dt: build_store_graph(x, e, m, ef_c, d))  # type: ignore[misc]
            )
    if _installed("hnswlib") and size <= 100_000:
        out.append(("hnswlib", f"M={m} ef_c={ef_c}", lambda x, e: build_hnswlib(x, e, m, ef_c)))
    if _installed("faiss") and size <= 100_000:
        out.append(("faiss-hnsw", f"M={m} ef_c={ef_c}", lambda x, e: build_faiss(x, e, m, ef_c)))
    if _installed("apsw") and _installed("sqlite_vec") and size <= 100_000:
        out.append(("sqlite-vec", "vec0 exact", build_sqlite_vec))
    return [c for c in out if not only or any(c[0].startswith(o) for o in only)]


def _filter_cell(b: Built, qs: F32, n: int, frac: float, matrix: F32) -> str:
    if b.filtered is None:
        return "-"
    rng = np.random.default_rng(int(frac * 1000))
    allowed = np.sort(rng.choice(n, max(K, int(n * frac)), replace=False)).astype(np.int64)
    truth = [allowed[exact_top(matrix[allowed], q, K)].tolist() for q in qs]
    found, lat = timed(lambda q: b.filtered(q, K, allowed), qs)  # type: ignore[misc]
    return f"R {recall(found, truth):.3f}, p50 {percentile(lat, 0.5):.2f} ms"


def run(
    locomo: Path,
    memorybank: Path | None,
    sizes: Sequence[int],
    *,
    n_queries: int = 200,
    embedder: str = "static",
    cache: Path,
    only: Sequence[str] | None = None,
    efs: Sequence[int] = (64, 128, 256, 512),
    m: int = 32,
    ef_c: int = 200,
    tracker: Tracker,
) -> list[AnnRow]:
    """Every candidate at every size; HNSW candidates once per ``ef`` in ``efs``."""
    _single_thread_blas()
    rows: list[AnnRow] = []
    for size in sorted(sizes):
        tracker.phase(f"ann: embedding {size:,}", 1)
        vecs, qs = embedded(locomo, memorybank, size, n_queries, embedder, cache)
        base, extra = vecs[: size - ONE_BY_ONE], vecs[size - ONE_BY_ONE :]
        truth = [exact_top(vecs, q, K).tolist() for q in qs]
        for name, params, builder in candidates(size, only, m, ef_c):
            tracker.phase(f"ann {size:,}: {name}", 1)
            b = builder(base, extra)
            filt = [_filter_cell(b, qs, size, f, vecs) for f in FILTERS]
            search = b.search
            for ef in efs if b.set_ef is not None else (0,):
                if b.set_ef is not None:
                    b.set_ef(ef)
                for q in qs[:5]:
                    search(q, K)
                found, lat = timed(lambda q: search(q, K), qs)  # noqa: B023
                rows.append(
                    AnnRow(
                        size=size,
                        candidate=name,
                        params=params + (f" ef={ef}" if ef else ""),
                        recall_at_10=recall(found, truth),
                        p50_ms=percentile(lat, 0.5),
                        p95_ms=percentile(lat, 0.95),
                        build_s=b.build_s,
                        batch_per_s=len(base) / b.build_s if b.build_s > 0 else 0.0,
                        one_add_ms=b.one_add_ms,
                        one_remove_ms=b.one_remove_ms,
                        memory_mb=b.memory_mb,
                        file_mb=b.file_mb,
                        load_ms=b.load_ms,
                        filter_1pct=filt[0],
                        filter_10pct=filt[1],
                        note=b.note,
                    )
                )
                tracker.advance()
            del b
    return rows


def _single_thread_blas() -> None:
    with contextlib.suppress(ImportError):  # threadpoolctl comes with scikit-style stacks; without it, BLAS default
        importlib.import_module("threadpoolctl").threadpool_limits(1)


def markdown(rows: Sequence[AnnRow]) -> str:
    """The rows as a Markdown table."""
    head = (
        "| size | candidate | params | recall@10 | p50 ms | p95 ms | batch add /s | one add ms | one remove ms "
        "| memory MB | file MB | load ms | filter 1% | filter 10% |"
    )
    lines = [head, "|" + " --- |" * 14]
    for r in rows:
        lines.append(
            f"| {r.size:,} | {r.candidate} | {r.params} | {r.recall_at_10:.3f} | {r.p50_ms:.3f} | {r.p95_ms:.3f} "
            f"| {r.batch_per_s:,.0f} | {r.one_add_ms:.3f} | {r.one_remove_ms:.3f} | {r.memory_mb:.0f} "
            f"| {r.file_mb:.0f} | {r.load_ms:.0f} | {r.filter_1pct} | {r.filter_10pct} |"
        )
    return "\n".join(lines)
