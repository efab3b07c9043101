"""An on-disk cache of embeddings for repeated benchmark runs (opt-in: ``MEMLANE_BENCH_EMBED_CACHE=FILE``).

A benchmark that ingests thousands of passages pays for the model on every run; a read-path change does not change
a single vector. ``DiskCachedEmbedder`` keeps every vector it computes in an SQLite file keyed by the embedder's
identity (the model and everything that changes its vectors), the kind (document or query) and the SHA-256 of the
text, so a second run, or the second ingest mode of the same set, pays only for search. Benchmark harnesses only:
the library never wraps its embedder in it. Latencies measured with a warm cache are not the model's.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import numpy as np

from memlane.embedding.base import Embedder, Vectors

#: The environment variable naming the cache file; unset or empty: no cache.
ENV: Final = "MEMLANE_BENCH_EMBED_CACHE"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DiskCachedEmbedder:
    """Wraps an ``Embedder``: same identity and dimension; vectors read from ``path`` when computed before."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner  # ``documents.passages.token_counter`` finds the tokenizer through it
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (identity TEXT, kind TEXT, key TEXT, vector BLOB, "
            "PRIMARY KEY (identity, kind, key))"
        )
        self._db.commit()

    def __repr__(self) -> str:
        return f"DiskCachedEmbedder({self.inner!r}, {str(self.path)!r})"

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    def _read(self, kind: str, keys: Sequence[str]) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        wanted = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE identity = ? AND kind = ? AND key IN ({marks})",
                    [self.identity, kind, *chunk],
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def _write(self, kind: str, pairs: Sequence[tuple[str, Vectors]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                [(self.identity, kind, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in pairs],
            )
            self._db.commit()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Document vectors: the cached ones read, the others computed (in one call) and stored.

        A vector is keyed by its text *and* the call it came in: a quantised model scales its activations over the
        whole batch, so a text embedded alone and the same text among 200 others get slightly different vectors,
        and a cached run must see the vectors an uncached run would.
        """
        own = [_key(t) for t in texts]
        call = _key("\n".join(own))
        keys = [_key(f"{call}:{k}") for k in own]
        found = self._read("doc", keys)
        if any(k not in found for k in keys):  # the whole call again, as an uncached run makes it
            computed = self.inner.embed(list(texts))
            pairs = list(dict(zip(keys, computed, strict=True)).items())
            self._write("doc", pairs)
            found.update(pairs)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> Vectors:
        """The query vector, computed once per distinct text and identity."""
        key = _key(text)
        found = self._read("query", [key])
        if key in found:
            return found[key]
        vector = self.inner.embed_query(text)
        self._write("query", [(key, vector)])
        return vector

    def clear(self) -> None:
        """Clear the wrapped embedder's in-memory query cache (the disk cache is kept)."""
        clear = getattr(self.inner, "clear", None)
        if callable(clear):
            clear()

    def close(self) -> None:
        with self._lock:
            self._db.close()
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def warm_queries(embedder: object, texts: Iterable[str]) -> None:
    """With the disk cache, store every query's vector before any preset is timed: otherwise the first preset timed
    pays the model for each query and the others read the cache, and their latencies are not comparable (seen as
    35-75 ms against 3-10 ms). Under the cache every preset's search latency then leaves the query's embedding out.
    Without the cache this does nothing (each preset pays its own embeddings: ``common.forget_queries``).
    """
    if isinstance(embedder, DiskCachedEmbedder):
        for text in dict.fromkeys(texts):
            embedder.embed_query(text)


def bench_embedder(spec: str | Embedder | None, cache_dir: Path | None = None) -> str | Embedder | None:
    """``spec`` as the benchmark should open it: wrapped in a ``DiskCachedEmbedder`` when ``MEMLANE_BENCH_EMBED_CACHE``
    names a file, else unchanged.
    """
    target = os.environ.get(ENV, "").strip()
    if not target:
        return spec
    from memlane.embedding import make_embedder

    return DiskCachedEmbedder(make_embedder(spec, cache_dir=cache_dir), Path(target).expanduser())
