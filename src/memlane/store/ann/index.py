"""``VectorIndex``: one scope's vectors, searched exactly while small and through HNSW once large, kept incrementally.

Every write is applied in place (an append, a row swap, a graph insert or removal): nothing is rebuilt because one
vector changed. The whole builds are the switch from exact to HNSW when the scope reaches ``settings.exact_below``
vectors (back, from the graph's vectors, when removals take it below half of that) and the compaction of a graph
holding removed vectors before it is saved; both run on a background thread (``build.GraphBuild``) while what they
replace serves, unless ``settings.background_build`` is off.
``applied_seq`` records the last change of the owner's feed that the index holds, and ``save`` writes it with the
data (see ``files``), so that ``sync.open_index`` can tell how far behind a file is.

Thread safety: one lock serialises every call. usearch searches share per-thread scratch contexts that Python
threads do not map onto, and a single query takes well under a millisecond, so readers queue for little.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memlane.errors import StoreError, ValidationError
from memlane.store.ann.build import GraphBuild
from memlane.store.ann.exact import ExactVectors, top_positions
from memlane.store.ann.files import commit_meta, folder_lock, load_exact, new_data_name, read_meta, save_exact
from memlane.store.ann.hnsw import HnswVectors
from memlane.store.ann.types import F32, FORMAT, I64, Hit, IndexMeta, IndexSettings

KeysLike = Iterable[int] | npt.NDArray[np.integer]


def as_keys(keys: KeysLike) -> I64:
    """Keys as a 1-d int64 array; negative keys are refused (HNSW keys are unsigned)."""
    arr = np.asarray(keys if isinstance(keys, np.ndarray) else list(keys), dtype=np.int64).reshape(-1)
    if arr.size and int(arr.min()) < 0:
        raise ValidationError("vector index keys must be non-negative integers")
    return arr


class VectorIndex:
    """The vectors of one scope, keyed by the owner's non-negative integer keys (e.g. SQLite row ids)."""

    def __init__(
        self, dim: int, identity: str, settings: IndexSettings | None = None, *, folder: Path | None = None
    ) -> None:
        if dim < 1:
            raise ValidationError(f"vector dimension must be positive, got {dim}")
        self.dim = dim
        self.identity = identity
        self.settings = settings or IndexSettings()
        self.folder = folder
        self._lock = threading.Lock()
        self._exact: ExactVectors | None = ExactVectors(dim)
        self._hnsw: HnswVectors | None = None
        self._build: GraphBuild | None = None  # the graph being built in the background, while exact serves
        self._applied = 0
        self._saved = 0
        self._file_behind = False  # a graph built in the background replaced what the file holds: save it soon
        self._deferred = 0  # inside ``deferred()``: no switch to the graph until the bulk load ends

    # -- state ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return self._size()

    def _size(self) -> int:
        return len(self._hnsw) if self._hnsw is not None else len(self._exact or ())

    def __contains__(self, key: object) -> bool:
        with self._lock:
            store = self._hnsw if self._hnsw is not None else self._exact
            return store is not None and key in store

    @property
    def kind(self) -> str:
        """``"exact"`` or ``"hnsw"``."""
        return "hnsw" if self._hnsw is not None else "exact"

    @property
    def applied_seq(self) -> int:
        """The last change of the owner's feed applied to this index (0 for none)."""
        return self._applied

    @applied_seq.setter
    def applied_seq(self, seq: int) -> None:
        with self._lock:
            self._applied = seq

    @property
    def unsaved_changes(self) -> int:
        """Sequence distance between what is applied and what the last save wrote (a hint for when to save)."""
        return self._applied - self._saved

    @property
    def needs_save(self) -> bool:
        """A graph built in the background serves and the file lacks it (else the next open builds it again); not
        while it holds removed vectors, whose save would start the next compaction at once (that waits).
        """
        hnsw = self._hnsw
        return self._file_behind and self.folder is not None and not (hnsw is not None and hnsw.tombstones)

    # -- writes -----------------------------------------------------------------------------------
    def _vectors(self, keys: I64, vectors: npt.ArrayLike) -> F32:
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.shape != (len(keys), self.dim):
            raise ValidationError(f"expected {len(keys)} vectors of dimension {self.dim}, got shape {arr.shape}")
        if len(np.unique(keys)) != len(keys):
            raise ValidationError("duplicate keys in one add")
        return np.ascontiguousarray(arr)

    def _advance(self, seq: int | None) -> None:
        if seq is not None and seq > self._applied:
            self._applied = seq

    def add(self, keys: KeysLike, vectors: npt.ArrayLike, *, seq: int | None = None) -> None:
        """Insert or replace the keys' vectors; ``seq`` is the feed sequence this write commits (if any)."""
        k = as_keys(keys)
        v = self._vectors(k, vectors)
        with self._lock:
            if self._hnsw is not None:
                self._hnsw.add(k, v)
            else:
                assert self._exact is not None
                self._exact.add(k, v, code=not self._deferred)
            build = self._build
            if build is not None and not build.done:  # (a failed build is not tried again until reopened)
                build.queued.append((k.copy(), v.copy()))
            elif build is None and not self._deferred:
                self._maybe_promote()
            self._advance(seq)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A bulk load (a rebuild, a replayed log): the switch to the graph waits for its end (one build over all of
        it, not one over the first ``exact_below`` vectors with a queued copy of the rest), and so does the coding
        of the exact vectors' int8 copy (searches meanwhile read the float32 matrix).
        """
        with self._lock:
            self._deferred += 1
        try:
            yield
        finally:
            with self._lock:
                self._deferred -= 1
                if not self._deferred and self._exact is not None:
                    self._exact.code_all()  # the int8 copy, coded once for the whole load
                if not self._deferred and self._build is None:
                    self._maybe_promote()

    def _maybe_promote(self) -> None:
        if self._exact is not None and len(self._exact) >= self.settings.exact_below:
            self._promote()

    def _promote(self) -> None:
        assert self._exact is not None
        if not self.settings.background_build:
            self._hnsw = HnswVectors.build(self.dim, self.settings, self._exact.keys.copy(), self._exact.matrix)
            self._exact = None
            return
        self._start_build(self._exact.keys.copy())

    def _compact_later(self) -> None:
        """Rebuild the graph over its live vectors in the background (its removed vectors' bytes must not be saved)."""
        assert self._hnsw is not None
        self._start_build(self._hnsw.keys())

    def _start_build(self, keys: I64) -> None:
        self._build = GraphBuild(
            self.dim, self.settings, keys, lock=self._lock, read=self._rows, install=self._install, forked=self._forked
        )
        self._build.start()

    def _forked(self) -> None:
        """In a child forked mid-build: the build thread, which may have held the lock, is gone; a new lock."""
        self._lock = threading.Lock()

    def _rows(self, keys: I64) -> tuple[I64, F32]:
        """The keys still held among ``keys`` and their vectors (the background build's reads; under the lock)."""
        if self._exact is not None:
            rows = self._exact.positions(keys)
            return self._exact.keys[rows], self._exact.matrix[rows]
        assert self._hnsw is not None
        return self._hnsw.vectors_of(keys)

    def _install(self, build: GraphBuild, graph: HnswVectors) -> None:
        """Put a finished graph (holding every write) in place of the exact vectors or the graph it compacts."""
        if build is not self._build:
            return
        self._build = None
        if self._exact is not None and len(self._exact) < self.settings.exact_below // 2:
            return  # shrunk meanwhile: exact search stays
        self._hnsw, self._exact = graph, None
        self._file_behind = True

    @property
    def building(self) -> bool:
        """Whether a graph is being built (or compacted) in the background, while what it replaces serves."""
        build = self._build
        return build is not None and not build.done

    def wait_built(self, timeout: float | None = None) -> bool:
        """Block until no graph is being built (the one under way installed, stopped or failed); whether none is."""
        build = self._build
        return build is None or build.wait(timeout)

    def stop_build(self) -> None:
        """Abandon a graph under construction (the index is being closed or dropped); exact search stays."""
        with self._lock:
            build, self._build = self._build, None
        if build is not None:
            build.stop()

    def remove(self, keys: KeysLike, *, seq: int | None = None) -> int:
        """Remove the keys held (others are ignored); how many were removed."""
        k = as_keys(keys)
        with self._lock:
            store = self._hnsw if self._hnsw is not None else self._exact
            assert store is not None
            n = store.remove(k)
            build = self._build
            if build is not None and not build.done and n:
                build.queued.append((k.copy(), None))
            if self._hnsw is not None and len(self._hnsw) < self.settings.exact_below // 2:
                self._demote()
            self._advance(seq)
            return n

    def _demote(self) -> None:
        """Back to exact search once the scope has shrunk to half the switch size (half: a scope that hovers around
        ``exact_below`` is not rebuilt back and forth). Exact search is as fast there and misses nothing, and the
        graph's slots of removed vectors go with it.
        """
        assert self._hnsw is not None
        if self._build is not None:  # a compaction under way is moot
            self._build.stop()
            self._build = None
        present, vectors = self._hnsw.vectors_of(self._hnsw.keys())
        self._exact = ExactVectors(self.dim, present, vectors)
        self._hnsw = None

    # -- reads ------------------------------------------------------------------------------------
    def _query(self, query: npt.ArrayLike) -> F32:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValidationError(f"query has dimension {q.shape[0]}, the index {self.dim}")
        return q

    def search(
        self, query: npt.ArrayLike, k: int, *, allowed: KeysLike | None = None, excluded: KeysLike | None = None
    ) -> list[Hit]:
        """The ``k`` best keys by inner product, best first.

        ``allowed`` restricts the result to those keys (answered exactly when they are few, else by an oversampled
        HNSW search with an exact fallback, so a narrow filter never empties the result); ``excluded`` keys (few,
        e.g. superseded memories) never appear.
        """
        keys, scores = self.search_arrays(query, k, allowed=allowed, excluded=excluded)
        return [Hit(key, s) for key, s in zip(keys.tolist(), scores.tolist(), strict=True)]

    def search_arrays(
        self, query: npt.ArrayLike, k: int, *, allowed: KeysLike | None = None, excluded: KeysLike | None = None
    ) -> tuple[I64, F32]:
        """``search`` as two arrays (keys, scores), best first: no object per hit."""
        q = self._query(query)
        if k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        ex = as_keys(excluded) if excluded is not None else np.empty(0, dtype=np.int64)
        with self._lock:
            if allowed is not None:
                al = np.unique(as_keys(allowed))
                if ex.size:
                    al = al[~np.isin(al, ex)]
                keys, scores = self._filtered(q, k, al)
            else:
                count = min(k + int(ex.size), self._size())
                store = self._hnsw if self._hnsw is not None else self._exact
                assert store is not None
                keys, scores = store.search(q, count)
                if ex.size:
                    keep = ~np.isin(keys, ex)
                    keys, scores = keys[keep], scores[keep]
        return keys[:k], scores[:k]

    def _filtered(self, q: F32, k: int, allowed: I64) -> tuple[I64, F32]:
        if self._exact is not None:
            rows = self._exact.positions(allowed)
            return self._exact.search_rows(q, rows, k)
        assert self._hnsw is not None
        n = len(self._hnsw)
        if not n or not allowed.size:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        share = min(1.0, allowed.size / n)
        count = math.ceil(k * self.settings.filter_oversample / share)
        if allowed.size > self.settings.filter_exact_max and count < allowed.size:
            keys, scores = self._hnsw.search(q, min(count, n))
            keep = np.isin(keys, allowed)
            if int(keep.sum()) >= k:
                return keys[keep][:k], scores[keep][:k]
        present, vecs = self._hnsw.vectors_of(allowed)
        scores = vecs @ q
        order = top_positions(scores, k, present)
        return present[order], scores[order]

    def scores(self, query: npt.ArrayLike, keys: KeysLike) -> list[Hit]:
        """Exact inner products of the query with the given keys' vectors (keys not held are skipped), key order."""
        present, scores = self.scores_arrays(query, keys)
        return [Hit(key, s) for key, s in zip(present.tolist(), scores.tolist(), strict=True)]

    def scores_arrays(self, query: npt.ArrayLike, keys: KeysLike) -> tuple[I64, F32]:
        """``scores`` as two arrays (the keys held, in the order given, and their scores)."""
        q = self._query(query)
        k = as_keys(keys)
        with self._lock:
            if self._exact is not None:
                rows = self._exact.positions(k)
                return self._exact.keys[rows], self._exact.matrix[rows] @ q
            assert self._hnsw is not None
            present, vecs = self._hnsw.vectors_of(k)
        return present, vecs @ q

    # -- files ------------------------------------------------------------------------------------
    def save(self, *, closing: bool = False) -> IndexMeta | None:
        """Write the index and its ``applied_seq`` to ``folder`` atomically; ``None`` when nothing was written.

        A graph holding removed or replaced vectors' bytes is compacted first: here, or with ``background_build`` on
        a background thread (this save writes nothing; when ``closing`` it starts nothing, and the next open
        rebuilds from the database, the owner having removed the file at the delete).
        """
        if self.folder is None:
            return None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the vector index folder {self.folder}: {e}") from e
        with self._lock:
            if self._hnsw is not None and self._hnsw.tombstones:  # removed vectors must not reach the file
                if not self.settings.background_build:
                    self._hnsw = self._hnsw.compacted()
                else:
                    if not closing and (self._build is None or self._build.done):
                        self._compact_later()
                    return None
            return self._write()

    def _write(self) -> IndexMeta:
        assert self.folder is not None
        with folder_lock(self.folder, exclusive=True):
            name = new_data_name(self.kind)
            data = self.folder / name
            rows: Path | None = None
            try:
                if self._hnsw is not None:
                    rows = self._hnsw.save(data)
                else:
                    assert self._exact is not None
                    save_exact(data, self._exact.keys, self._exact.matrix)
                meta = IndexMeta(
                    identity=self.identity,
                    dim=self.dim,
                    applied_seq=self._applied,
                    count=self._size(),
                    kind="hnsw" if self._hnsw is not None else "exact",
                    data_file=name,
                    data_bytes=data.stat().st_size,
                    rows_file=rows.name if rows is not None else None,
                    rows_bytes=rows.stat().st_size if rows is not None else 0,
                )
                commit_meta(self.folder, meta)
            except OSError as e:
                data.unlink(missing_ok=True)
                HnswVectors.rows_path(data).unlink(missing_ok=True)  # (written or half-written before the error)
                raise StoreError(f"cannot save the vector index in {self.folder}: {e}") from e
            self._saved = self._applied
            self._file_behind = False
            return meta

    @classmethod
    def load(
        cls, folder: Path, dim: int, identity: str, settings: IndexSettings | None = None
    ) -> tuple[VectorIndex | None, str]:
        """The index saved in ``folder``, or ``None`` and why it cannot be used (missing, torn, another model...)."""
        if not folder.exists():
            return None, "no complete saved index"
        with folder_lock(folder, exclusive=False):
            return cls._load_locked(folder, dim, identity, settings)

    @classmethod
    def _load_locked(
        cls, folder: Path, dim: int, identity: str, settings: IndexSettings | None
    ) -> tuple[VectorIndex | None, str]:
        meta = read_meta(folder)
        if meta is None:
            return None, "no complete saved index"
        if meta.format != FORMAT:
            return None, f"saved in format {meta.format}, not {FORMAT}"
        if meta.identity != identity or meta.dim != dim:
            return None, f"saved for {meta.identity!r} ({meta.dim}-d), not {identity!r} ({dim}-d)"
        out = cls(dim, identity, settings, folder=folder)
        try:
            if meta.kind == "hnsw":
                rows = folder / meta.rows_file if meta.rows_file else None
                out._hnsw = HnswVectors.load(folder / meta.data_file, dim, out.settings, rows)
                out._exact = None
            else:
                keys, vectors = load_exact(folder / meta.data_file, dim)
                out._exact = ExactVectors(dim, keys, vectors, adopt=True)
        except StoreError as e:
            return None, str(e)
        if out._size() != meta.count:
            return None, f"the data file holds {out._size()} vectors, its record says {meta.count}"
        out._applied = out._saved = meta.applied_seq
        if out._exact is not None and len(out._exact) >= out.settings.exact_below:
            with out._lock:  # saved while its graph was being built: build it again
                out._promote()
        return out, "loaded"
