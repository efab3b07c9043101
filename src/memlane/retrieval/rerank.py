"""The optional reranking stage: reorder the best fused candidates with a second, slower judgement of relevance.

A ``Reranker`` takes the query and the texts of the top candidates of fusion and returns them in a new order with a
score each. Two are built in:

- ``MMRReranker``: maximal marginal relevance over the fused scores, trading relevance for variety (no model);
- ``EndpointReranker``: any ``POST /rerank`` server in the shape Cohere, Jina, vLLM, llama.cpp and Hugging Face
  TEI serve (a cross-encoder such as ``BAAI/bge-reranker-base`` or ``cross-encoder/ms-marco-MiniLM-L-6-v2`` run
  locally), configured like the OpenAI-compatible embedder: ``endpoint:MODEL@URL``.

No reranker model ships with memlane: none is published on PyPI with its weights, and memlane never downloads a
model at run time. Reranking is off by default (``Config.reranker = None``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential, wait_none

from memlane.errors import ConfigError, MissingDependencyError, RetrievalError
from memlane.retrieval.text import query_terms

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RerankCandidate:
    """One fused candidate offered to a reranker: its key, its text and its fused score."""

    key: str
    text: str
    score: float


@dataclass(frozen=True)
class Reranked:
    """One candidate in the reranker's order, with the reranker's score (higher is better)."""

    key: str
    score: float


@runtime_checkable
class Reranker(Protocol):
    """Reorders candidates for a query; returns at most ``top_n`` of them, best first."""

    @property
    def identity(self) -> str: ...

    def rerank(self, query: str, candidates: Sequence[RerankCandidate], top_n: int) -> list[Reranked]: ...


class MMRReranker:
    """Maximal marginal relevance: each next pick maximises ``lam * relevance - (1 - lam) * redundancy``.

    Relevance is the fused score scaled to [0, 1] over the candidates; redundancy is the largest word overlap
    (Jaccard of content words) with a candidate already picked. Word overlap rather than embeddings keeps the stage
    free of model calls, so it costs microseconds; near-duplicate turns share most of their words anyway.
    """

    def __init__(self, lam: float = 0.7) -> None:
        if not 0.0 <= lam <= 1.0 or math.isnan(lam):
            raise ConfigError(f"the MMR trade-off must be within [0, 1], got {lam}")
        self.lam = lam

    @property
    def identity(self) -> str:
        return f"mmr:{self.lam:g}"

    def rerank(self, query: str, candidates: Sequence[RerankCandidate], top_n: int) -> list[Reranked]:
        if not candidates or top_n <= 0:
            return []
        lo = min(c.score for c in candidates)
        span = max(c.score for c in candidates) - lo
        relevance = {c.key: (c.score - lo) / span if span > 1e-12 else 1.0 for c in candidates}
        words = {c.key: frozenset(query_terms(c.text)) for c in candidates}
        left = list(candidates)
        out: list[Reranked] = []
        while left and len(out) < top_n:
            best, best_value = left[0], -math.inf
            for c in left:
                redundancy = max((_jaccard(words[c.key], words[p.key]) for p in out), default=0.0)
                value = self.lam * relevance[c.key] - (1.0 - self.lam) * redundancy
                if value > best_value + 1e-12:
                    best, best_value = c, value
            out.append(Reranked(best.key, best_value))
            left.remove(best)
        return out


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


class _Retryable(Exception):
    """An HTTP status worth another attempt (408/409/425/429/5xx)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")


class EndpointReranker:
    """A ``POST {base_url}/rerank`` server: sends the query and the candidates' texts, reads back a score for each.

    The request is ``{"model", "query", "documents", "top_n"}`` (Cohere / Jina / vLLM / llama.cpp) and carries
    ``texts`` too (Hugging Face TEI); the answer may be ``{"results": [{"index", "relevance_score"}]}`` or a list of
    ``{"index", "score"}``. A timeout, a refused connection or HTTP 408/409/425/429/5xx is retried ``max_retries``
    times with exponential backoff; any other failure, or an answer that does not score the documents sent, raises
    ``RetrievalError`` naming the URL.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 10.0,
        *,
        max_retries: int = 2,
        backoff: float = 0.25,
    ) -> None:
        try:
            import httpx
        except ImportError as e:
            raise MissingDependencyError("rerank endpoint client", "openai") from e
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"rerank endpoint must be an http(s) URL, got {base_url!r}")
        if not model.strip():
            raise ConfigError("a rerank endpoint needs a model name")
        if timeout <= 0 or max_retries < 0 or backoff < 0:
            raise ConfigError("timeout must be positive; max_retries and backoff not negative")
        self.base_url = base_url.strip().rstrip("/")
        self.url = f"{self.base_url}/rerank"
        self.model = model.strip()
        self.max_retries = max_retries
        self.backoff = backoff
        self._host = parts.netloc.rpartition("@")[2]  # never keep credentials of the URL in the identity
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._httpx = httpx
        self._client = httpx.Client(headers=headers, timeout=timeout)

    def __repr__(self) -> str:
        return f"EndpointReranker(url={self.url!r}, model={self.model!r})"

    @property
    def identity(self) -> str:
        return f"endpoint:{self.model}@{self._host}"

    def close(self) -> None:
        self._client.close()

    def rerank(self, query: str, candidates: Sequence[RerankCandidate], top_n: int) -> list[Reranked]:
        if not candidates or top_n <= 0:
            return []
        texts = [c.text for c in candidates]
        body = {"model": self.model, "query": query, "documents": texts, "texts": texts, "top_n": len(texts)}
        scores = self._scores(self._post(body), len(texts))
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
        return [Reranked(candidates[i].key, scores[i]) for i in order[:top_n]]

    def _post(self, body: dict[str, Any]) -> Any:
        """POST once per attempt; retries (timeouts, refused connections, ``RETRY_STATUS``) are tenacity's."""
        httpx = self._httpx
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=self.backoff, max=30.0) if self.backoff else wait_none(),
            retry=retry_if_exception_type((httpx.TimeoutException, httpx.ConnectError, _Retryable)),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    response = self._client.post(self.url, json=body)
                    if response.status_code in RETRY_STATUS:
                        raise _Retryable(response.status_code)
        except (httpx.TimeoutException, httpx.ConnectError, _Retryable) as exc:
            raise RetrievalError(f"rerank endpoint {self.url} failed: {exc}") from exc
        if response.status_code >= 400:
            raise RetrievalError(f"rerank endpoint {self.url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError as exc:
            raise RetrievalError(f"rerank endpoint {self.url} did not answer JSON") from exc

    def _scores(self, payload: Any, n: int) -> list[float]:
        rows = payload.get("results", payload.get("data")) if isinstance(payload, dict) else payload
        if not isinstance(rows, list):
            raise RetrievalError(f"rerank endpoint {self.url} answered no list of results")
        scores: list[float | None] = [None] * n
        for row in rows:
            if not isinstance(row, dict):
                raise RetrievalError(f"rerank endpoint {self.url} answered a result that is not an object")
            index, score = row.get("index"), row.get("relevance_score", row.get("score"))
            if not isinstance(index, int) or not 0 <= index < n or not isinstance(score, int | float):
                raise RetrievalError(f"rerank endpoint {self.url} answered a bad result {row!r}")
            scores[index] = float(score)
        if any(s is None for s in scores):
            raise RetrievalError(f"rerank endpoint {self.url} scored {sum(s is not None for s in scores)} of {n}")
        return [s for s in scores if s is not None]


def make_reranker(spec: str | Reranker | None, *, api_key: str | None = None) -> Reranker | None:
    """A reranker from a spec: ``None``/``"none"`` (off), ``"mmr"``, ``"mmr:LAMBDA"``, or ``"endpoint:MODEL@URL"``."""
    if spec is None or isinstance(spec, Reranker):
        return spec
    text = spec.strip()
    name, _, arg = text.partition(":")
    if name in ("", "none", "off"):
        return None
    if name == "mmr":
        try:
            return MMRReranker(float(arg) if arg else 0.7)
        except ValueError:
            raise ConfigError(f"bad reranker spec {text!r}: expected mmr or mmr:LAMBDA (0 to 1)") from None
    if name == "endpoint":
        model, at, url = arg.partition("@")
        if not at or not model or not url:
            raise ConfigError(f"bad reranker spec {text!r}: expected endpoint:MODEL@http(s)://HOST[:PORT]/v1")
        return EndpointReranker(url, model, api_key=api_key)
    raise ConfigError(f"unknown reranker {text!r}; choose none, mmr, mmr:LAMBDA or endpoint:MODEL@URL")
