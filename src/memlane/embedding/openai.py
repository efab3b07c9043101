"""``OpenAIEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM, TEI) over httpx."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from memlane.embedding._common import normalise_rows
from memlane.embedding.base import Vectors
from memlane.errors import ConfigError, EmbeddingError, MissingDependencyError

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 30.0


class OpenAIEmbedder:
    """Embeds through ``POST {base_url}/embeddings``; ``base_url`` is the API root, e.g. ``http://localhost:11434/v1``.

    A ``base_url`` without a path gets ``/v1`` appended. Texts are sent in batches of ``batch_size``; a request
    that times out, cannot connect, or gets HTTP 408/409/425/429/5xx is retried up to ``max_retries`` times with
    exponential backoff (``backoff``, doubled each time, or the server's ``Retry-After`` up to 30 s). Other
    failures raise ``EmbeddingError`` naming the URL and HTTP status. Vectors are L2-normalised here, whatever
    the server does. ``dim`` is checked against every response; if not given it is learnt from the first one
    (reading ``dim`` before any embedding sends one probe request). Nothing is sent before a call needs it, but
    note that on Python 3.11 ``isinstance(x, Embedder)`` reads ``dim``: pass ``dim`` to avoid that probe.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        *,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        try:
            import httpx
        except ImportError as e:
            raise MissingDependencyError("OpenAI-compatible embedder", "openai") from e
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"embedding endpoint must be an http(s) URL, got {base_url!r}")
        if not model.strip():
            raise ConfigError("an OpenAI-compatible embedder needs a model name")
        if batch_size <= 0 or timeout <= 0 or max_retries < 0 or backoff < 0 or (dim is not None and dim <= 0):
            raise ConfigError("batch_size, timeout and dim must be positive; max_retries and backoff not negative")
        root = base_url.strip().rstrip("/")
        self.base_url = root if parts.path.strip("/") else f"{root}/v1"
        self.url = f"{self.base_url}/embeddings"
        self.model = model.strip()
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        self._host = parts.netloc.rpartition("@")[2]  # never keep credentials of the URL in the identity
        self._dim = dim
        self._dim_lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._httpx = httpx
        self._client = httpx.Client(headers=headers, timeout=timeout)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(url={self.url!r}, model={self.model!r}, dim={self._dim})"

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    @property
    def identity(self) -> str:
        return f"openai-compatible:{self.model}@{self._host}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: an ``(len(texts), dim)`` float32 array of unit rows."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise EmbeddingError(f"embed() takes strings, got {type(text).__name__}")
        if not texts:
            if self._dim is None:
                raise EmbeddingError(f"dimension of {self.identity} unknown: embed a text first or pass dim")
            return np.zeros((0, self._dim), dtype=np.float32)
        batches = [self._embed_batch(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalise_rows(np.concatenate(batches), what=f"embedding endpoint {self.url}")

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query: a ``(dim,)`` float32 unit vector."""
        vector: Vectors = self.embed([text])[0]
        return vector

    # -- HTTP --------------------------------------------------------------------------------------------------
    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body = self._post({"model": self.model, "input": texts, "encoding_format": "float"})
        try:
            items = sorted(body["data"], key=lambda item: int(item.get("index", 0)))
            vectors = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise EmbeddingError(f"embedding endpoint {self.url} returned an unexpected body: {e!r}") from e
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingError(
                f"embedding endpoint {self.url} returned {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {len(texts)} texts"
            )
        with self._dim_lock:
            if self._dim is None:
                self._dim = int(vectors.shape[1])
        if vectors.shape[1] != self._dim:
            raise EmbeddingError(
                f"embedding endpoint {self.url} returned {vectors.shape[1]}-d vectors, expected {self._dim}"
            )
        return vectors

    def _post(self, payload: dict[str, Any]) -> Any:
        httpx = self._httpx
        attempt = 0
        while True:
            delay = self.backoff * (2**attempt)
            try:
                response = self._client.post(self.url, json=payload)
            except (httpx.TimeoutException, httpx.TransportError) as e:
                problem = f"{type(e).__name__}: {e}"
                if attempt >= self.max_retries:
                    raise EmbeddingError(
                        f"embedding request to {self.url} failed after {attempt + 1} attempts: {problem}"
                    ) from e
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError as e:
                        raise EmbeddingError(f"embedding endpoint {self.url} returned invalid JSON") from e
                problem = f"HTTP {response.status_code}: {response.text[:300]!r}"
                if response.status_code not in RETRY_STATUS or attempt >= self.max_retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise EmbeddingError(f"embedding request to {self.url} failed{tries}: {problem}")
                delay = max(delay, _retry_after(response.headers.get("retry-after")))
            attempt += 1
            log.warning("embedding request to %s failed (%s); retry %d in %.2f s", self.url, problem, attempt, delay)
            time.sleep(delay)


def _retry_after(value: str | None) -> float:
    """Seconds asked for by a numeric ``Retry-After`` header, capped; 0 if absent or not a number."""
    try:
        return min(max(float(value or 0), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        return 0.0
