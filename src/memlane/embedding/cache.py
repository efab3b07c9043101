"""``CachedQueryEmbedder``: an LRU of query vectors in front of any embedder, so repeated queries skip the model."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from memlane.embedding.base import Embedder, Vectors
from memlane.errors import ConfigError


class CachedQueryEmbedder:
    """Wraps an ``Embedder``: same identity and dimension, ``embed_query`` memoised in a thread-safe LRU.

    ``embed`` (documents) is passed through uncached. Returned query vectors are copies, so a caller
    that mutates one cannot poison the cache.
    """

    def __init__(self, inner: Embedder, maxsize: int = 1024) -> None:
        if maxsize <= 0:
            raise ConfigError("CachedQueryEmbedder maxsize must be positive")
        self.inner = inner
        self.maxsize = maxsize
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"CachedQueryEmbedder({self.inner!r}, maxsize={self.maxsize})"

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    def load(self) -> None:
        """Load the wrapped model now, if it loads lazily (a remote endpoint has nothing to load)."""
        load = getattr(self.inner, "load", None)
        if callable(load):
            load()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents with the wrapped embedder (not cached)."""
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Vectors:
        """The wrapped embedder's query vector, computed at most once per distinct text while cached."""
        with self._lock:
            vector = self._cache.get(text)
            if vector is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                return vector.copy()
        vector = self.inner.embed_query(text)  # outside the lock: a slow model must not serialise cache hits
        with self._lock:
            self.misses += 1
            self._cache[text] = vector.copy()
            self._cache.move_to_end(text)
            while len(self._cache) > self.maxsize:
                self._cache.popitem(last=False)
        return vector

    def clear(self) -> None:
        """Forget every cached query vector."""
        with self._lock:
            self._cache.clear()

    def close(self) -> None:
        """Close the wrapped embedder if it holds resources (e.g. an HTTP client)."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
