"""OpenAIEmbedder against a real local HTTP server speaking the OpenAI embeddings API on 127.0.0.1."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memlane.embedding import CachedQueryEmbedder, OpenAIEmbedder, make_embedder
from memlane.errors import ConfigError, EmbeddingError, MissingDependencyError

DIM = 8


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately not unit-length."""
    return [float(len(text) + 1), *(float((ord(c) % 7) + 1) for c in (text + "abcdefg")[: DIM - 1])]


@dataclass
class Script:
    """What the server answers: a queue of (status, body-or-None, delay) then plain successes."""

    plan: list[tuple[int, str | None, float]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.script.lock:
            self.script.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            status, text, delay = self.script.plan.pop(0) if self.script.plan else (200, None, 0.0)
        time.sleep(delay)
        if text is None:
            items = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(body["input"])
            ]
            text = json.dumps({"object": "list", "data": items[::-1], "model": body["model"]})  # out of order
        payload = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("ScriptedHandler", (Handler,), {"script": script})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def expected(texts: list[str]) -> np.ndarray:
    v = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_embeds_in_batches_normalises_and_keeps_order(server: tuple[str, Script]) -> None:
    url, script = server
    texts = ["alpha", "beta gamma", "delta", "epsilon zeta eta", "theta"]
    with OpenAIEmbedder(url, "nomic-embed-text", api_key="sk-test", batch_size=2, backoff=0) as e:
        v = e.embed(texts)
        assert e.dim == DIM  # learnt from the first response, no extra request
        q = e.embed_query("alpha")
    assert v.shape == (5, DIM)
    assert v.dtype == np.float32
    np.testing.assert_allclose(v, expected(texts), rtol=1e-6)
    np.testing.assert_allclose(q, v[0], rtol=1e-6)
    assert len(script.requests) == 4  # 2 + 2 + 1, then the query
    first = script.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["headers"]["Authorization"] == "Bearer sk-test"
    assert first["body"] == {"model": "nomic-embed-text", "input": ["alpha", "beta gamma"], "encoding_format": "float"}


def test_identity_dim_probe_and_url_without_v1(server: tuple[str, Script]) -> None:
    url, script = server
    root = url.removesuffix("/v1")
    e = OpenAIEmbedder(root + "/", "text-embedding-3-small", backoff=0)
    assert e.url == url + "/embeddings"
    assert e.identity == f"openai-compatible:text-embedding-3-small@{root.removeprefix('http://')}"
    assert not script.requests  # nothing sent before it is needed
    assert e.dim == DIM  # one probe request
    assert len(script.requests) == 1
    assert "Authorization" not in script.requests[0]["headers"]
    assert e.embed([]).shape == (0, DIM)
    e.close()


def test_retries_a_500_then_succeeds(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(500, '{"error": "overloaded"}', 0.0), (429, '{"error": "slow down"}', 0.0)]
    e = OpenAIEmbedder(url, "m", backoff=0.01, max_retries=3)
    v = e.embed(["hello"])
    np.testing.assert_allclose(v, expected(["hello"]), rtol=1e-6)
    assert len(script.requests) == 3


def test_retries_a_timeout(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(200, None, 1.0)]
    e = OpenAIEmbedder(url, "m", timeout=0.2, backoff=0, max_retries=1)
    np.testing.assert_allclose(e.embed(["hi"]), expected(["hi"]), rtol=1e-6)
    assert len(script.requests) == 2


def test_gives_up_after_bounded_retries_with_a_clear_error(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(503, '{"error": "down"}', 0.0)] * 10
    e = OpenAIEmbedder(url, "m", backoff=0, max_retries=2)
    with pytest.raises(EmbeddingError) as info:
        e.embed(["hello"])
    message = str(info.value)
    assert f"{url}/embeddings" in message
    assert "HTTP 503" in message
    assert "3 attempts" in message
    assert len(script.requests) == 3


def test_does_not_retry_a_client_error(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(401, '{"error": "bad key"}', 0.0)]
    e = OpenAIEmbedder(url, "m", api_key="wrong", backoff=0)
    with pytest.raises(EmbeddingError, match="HTTP 401") as info:
        e.embed(["hello"])
    assert "wrong" not in str(info.value)  # the key never shows up in errors
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("not json", "invalid JSON"),
        ('{"data": [{"index": 0}]}', "unexpected body"),
        ('{"data": []}', "0 vectors for 1 texts"),
        ('{"data": [{"index": 0, "embedding": [0, 0, 0]}]}', "zero or non-finite"),
    ],
)
def test_malformed_responses_raise(server: tuple[str, Script], body: str, match: str) -> None:
    url, script = server
    script.plan = [(200, body, 0.0)]
    with pytest.raises(EmbeddingError, match=match):
        OpenAIEmbedder(url, "m", backoff=0).embed(["hello"])


def test_dimension_mismatch_raises(server: tuple[str, Script]) -> None:
    url, _ = server
    with pytest.raises(EmbeddingError, match="8-d vectors, expected 4"):
        OpenAIEmbedder(url, "m", dim=4).embed(["hello"])


def test_connection_refused_is_an_embedding_error() -> None:
    import socket

    with socket.socket() as s:  # a port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", backoff=0, max_retries=1)
    with pytest.raises(EmbeddingError, match=f"127.0.0.1:{port}/v1/embeddings failed after 2 attempts"):
        e.embed(["hello"])


def test_make_embedder_wraps_it_in_a_query_cache(server: tuple[str, Script], monkeypatch: pytest.MonkeyPatch) -> None:
    url, script = server
    monkeypatch.setenv("MEMLANE_OPENAI_API_KEY", "sk-env")
    e = make_embedder(f"openai:nomic-embed-text:latest@{url}", cache_dir=None)
    assert isinstance(e, CachedQueryEmbedder)
    first = e.embed_query("what is my dog's name?")
    second = e.embed_query("what is my dog's name?")
    np.testing.assert_array_equal(first, second)
    assert len(script.requests) == 1
    assert script.requests[0]["body"]["model"] == "nomic-embed-text:latest"
    assert script.requests[0]["headers"]["Authorization"] == "Bearer sk-env"
    e.close()


def test_bad_configuration() -> None:
    with pytest.raises(ConfigError):
        OpenAIEmbedder("localhost:11434", "m")
    with pytest.raises(ConfigError):
        OpenAIEmbedder("http://localhost:11434/v1", " ")
    with pytest.raises(ConfigError):
        OpenAIEmbedder("http://localhost:11434/v1", "m", batch_size=0)


def test_missing_httpx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingDependencyError) as info:
        OpenAIEmbedder("http://127.0.0.1:1/v1", "m")
    assert info.value.extra == "openai"
    assert "memlane[openai]" in str(info.value)
