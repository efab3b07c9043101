"""``OpenAIChat``: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio)."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from memlane.errors import ConfigError, LLMError, MissingDependencyError
from memlane.llm.base import ChatMessage, ChatReply, Usage
from memlane.llm.usage import UsageCounter

log = logging.getLogger(__name__)

StructuredMode = Literal["json_schema", "json_object", "none"]
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 30.0
_REFUSAL = re.compile(r"response_format|json_schema|json_object|structured output", re.IGNORECASE)
_DOWNGRADE: dict[StructuredMode, StructuredMode] = {"json_schema": "json_object", "json_object": "none"}


class _RetryableError(Exception):
    """A failure worth another attempt: timeout, connection error, HTTP 408/409/425/429/5xx."""

    def __init__(self, problem: str, retry_after: float = 0.0) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class _StatusError(Exception):
    """A non-retryable HTTP status."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status = status
        self.body = body


class OpenAIChat:
    """Chat completions through ``POST {base_url}/chat/completions``; ``base_url`` is the API root (``.../v1``).

    A ``base_url`` without a path gets ``/v1`` appended. With a ``schema``, the request asks for structured output:
    ``structured="json_schema"`` sends ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM, llama.cpp,
    LM Studio, recent Ollama); a server that refuses it (an error of any status whose body names
    ``response_format``, ``json_schema`` or ``json_object``: llama-cpp-python's server answers HTTP 500) is asked
    again in plain JSON mode (``{"type": "json_object"}``), then with no ``response_format`` at all, and the
    downgrade is remembered. Other errors do not downgrade.
    Timeouts, connection errors and HTTP 408/409/425/429/5xx are retried up to ``max_retries`` times with
    exponential backoff (or the server's ``Retry-After``, capped at 30 s), by tenacity. Anything else, or the last
    failure, raises ``LLMError`` naming the URL. Every call is recorded in ``counter`` when one is given.
    Nothing is sent before ``complete`` is called.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        structured: StructuredMode = "json_schema",
        counter: UsageCounter | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as e:
            raise MissingDependencyError("OpenAI-compatible chat model", "openai") from e
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"chat endpoint must be an http(s) URL, got {base_url!r}")
        if not model.strip():
            raise ConfigError("an OpenAI-compatible chat model needs a model name")
        if timeout <= 0 or max_retries < 0 or backoff < 0:
            raise ConfigError("timeout must be positive; max_retries and backoff not negative")
        if structured not in ("json_schema", "json_object", "none"):
            raise ConfigError(f"structured must be json_schema, json_object or none, got {structured!r}")
        root = base_url.strip().rstrip("/")
        self.base_url = root if parts.path.strip("/") else f"{root}/v1"
        self.url = f"{self.base_url}/chat/completions"
        self.model = model.strip()
        self.max_retries = max_retries
        self.backoff = backoff
        self.counter = counter
        self._extra_body = dict(extra_body or {})
        self._mode: StructuredMode = structured
        self._mode_lock = threading.Lock()
        self._host = parts.netloc.rpartition("@")[2]  # never show credentials of the URL
        self._shown = self.url.replace(parts.netloc, self._host, 1)
        self._httpx = httpx
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), follow_redirects=False
        )

    def __repr__(self) -> str:
        return f"OpenAIChat(url={self._shown!r}, model={self.model!r}, structured={self._mode!r})"

    def __enter__(self) -> OpenAIChat:
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
    def structured_mode(self) -> StructuredMode:
        """The structured-output mode in use (it may have been downgraded after a server refused one)."""
        return self._mode

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> ChatReply:
        """Send ``messages`` and return the first choice; see the class docstring for structured output."""
        if not messages:
            raise ConfigError("complete() needs at least one message")
        if max_tokens <= 0:
            raise ConfigError(f"max_tokens must be positive, got {max_tokens}")
        start = time.perf_counter()
        try:
            body = self._complete_with_fallback(messages, schema, max_tokens, temperature)
            reply = self._reply(body, schema is not None, time.perf_counter() - start)
        except LLMError:
            if self.counter is not None:
                self.counter.record(self.model, Usage(), time.perf_counter() - start, ok=False)
            raise
        if self.counter is not None:
            self.counter.record(self.model, reply.usage, reply.latency)
        return reply

    # -- request building --------------------------------------------------------------------------------
    def _payload(
        self,
        messages: Sequence[ChatMessage],
        schema: Mapping[str, Any] | None,
        max_tokens: int,
        temperature: float,
        mode: StructuredMode,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            **self._extra_body,
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": False,
        }
        if schema is not None and mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": dict(schema)},
            }
        elif schema is not None and mode == "json_object":
            payload["response_format"] = {"type": "json_object"}
        return payload

    def _complete_with_fallback(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, max_tokens: int, temperature: float
    ) -> Any:
        mode = self._mode
        while True:
            try:
                return self._post(self._payload(messages, schema, max_tokens, temperature, mode))
            except _StatusError as e:
                refused = schema is not None and mode != "none" and bool(_REFUSAL.search(e.body[:2000]))
                if not refused:
                    raise LLMError(f"chat request to {self._shown} failed: {e}") from e
                lower = _DOWNGRADE[mode]
                log.warning("%s refused response_format %s (%s); falling back to %s", self._shown, mode, e, lower)
                with self._mode_lock:
                    if self._mode == mode:
                        self._mode = lower
                mode = lower

    def _post(self, payload: dict[str, Any]) -> Any:
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_RetryableError),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._send(payload)
        except _RetryableError as e:
            raise LLMError(f"chat request to {self._shown} failed after {self.max_retries + 1} attempts: {e}") from e
        raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover

    def _send(self, payload: dict[str, Any]) -> Any:
        httpx = self._httpx
        try:
            response = self._client.post(self.url, json=payload)
        except (httpx.TimeoutException, httpx.TransportError) as e:
            raise _RetryableError(f"{type(e).__name__}: {e}") from e
        if response.status_code == 200:
            try:
                return response.json()
            except ValueError as e:
                raise LLMError(f"chat endpoint {self._shown} returned a body that is not JSON") from e
        if "response_format" in payload and _REFUSAL.search(response.text[:2000]):
            raise _StatusError(response.status_code, response.text)  # some servers refuse a format with a 500
        if response.status_code in RETRY_STATUS:
            raise _RetryableError(
                f"HTTP {response.status_code}: {response.text[:300]!r}",
                _retry_after(response.headers.get("retry-after")),
            )
        raise _StatusError(response.status_code, response.text)

    def _wait(self, state: RetryCallState) -> float:
        delay = float(self.backoff * (2 ** (state.attempt_number - 1)))
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _RetryableError):
            delay = max(delay, exc.retry_after)
        return delay

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        log.warning("chat request to %s failed (%s); retry %d", self._shown, exc, state.attempt_number)

    # -- response ------------------------------------------------------------------------------------------
    def _reply(self, body: Any, want_json: bool, latency: float) -> ChatReply:
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
            finish = choice.get("finish_reason")
            raw_usage = body.get("usage") or {}
            usage = Usage(
                prompt_tokens=int(raw_usage.get("prompt_tokens") or 0),
                completion_tokens=int(raw_usage.get("completion_tokens") or 0),
            )
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise LLMError(f"chat endpoint {self._shown} returned an unexpected body: {e!r}") from e
        if not isinstance(text, str):
            raise LLMError(f"chat endpoint {self._shown} returned non-text content")
        parsed: Any | None = None
        if want_json:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        return ChatReply(
            text=text,
            parsed=parsed,
            usage=usage,
            latency=latency,
            model=str(body.get("model") or self.model),
            finish_reason=finish if isinstance(finish, str) else None,
        )


def _retry_after(value: str | None) -> float:
    """Seconds asked for by a numeric ``Retry-After`` header, capped; 0 if absent or not a number."""
    try:
        return min(max(float(value or 0), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        return 0.0
