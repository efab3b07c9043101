"""The reranking stage: MMR, the /rerank endpoint client against a local stub server, and its place in search."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest

from memlane import Memory, Message
from memlane.config import Config
from memlane.errors import ConfigError, RetrievalError
from memlane.retrieval.rerank import EndpointReranker, MMRReranker, RerankCandidate, make_reranker


class _Stub(BaseHTTPRequestHandler):
    """Scores each document by how many of the query's words it contains (a stand-in for a cross-encoder)."""

    requests: ClassVar[list[dict[str, Any]]] = []
    mode = "cohere"
    fail_first = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        words = set(body["query"].lower().split())
        docs = body["documents"]
        scores = [len(words & set(d.lower().split())) / 10 for d in docs]
        if self.mode == "cohere":
            payload: Any = {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
        elif self.mode == "tei":
            payload = [{"index": i, "score": s} for i, s in enumerate(scores)]
        else:  # a broken server: scores one document only
            payload = {"results": [{"index": 0, "relevance_score": 1.0}]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[str]:
    _Stub.requests = []
    _Stub.mode = "cohere"
    _Stub.fail_first = 0
    server = HTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


CANDS = [
    RerankCandidate("a", "the weather was grey all week", 0.9),
    RerankCandidate("b", "my dog Pepper loves agility class", 0.5),
    RerankCandidate("c", "Pepper is my dog, a border collie breed", 0.4),
]


def test_endpoint_reorders_by_the_servers_scores(stub: str) -> None:
    reranker = EndpointReranker(stub, "bge-reranker-base", api_key="k")
    got = reranker.rerank("what breed is my dog Pepper", CANDS, top_n=2)
    assert [r.key for r in got] == ["c", "b"]
    assert got[0].score == pytest.approx(0.4)
    sent = _Stub.requests[0]
    assert sent["path"] == "/v1/rerank"
    assert sent["body"]["model"] == "bge-reranker-base"
    assert sent["body"]["documents"] == [c.text for c in CANDS]
    assert sent["auth"] == "Bearer k"
    assert reranker.identity.startswith("endpoint:bge-reranker-base@127.0.0.1:")


def test_endpoint_reads_the_tei_answer_shape_and_retries_a_busy_server(stub: str) -> None:
    _Stub.mode = "tei"
    _Stub.fail_first = 1
    got = EndpointReranker(stub, "m", backoff=0.0).rerank("dog Pepper", CANDS, top_n=3)
    assert [r.key for r in got] == ["b", "c", "a"]
    assert len(_Stub.requests) == 2


def test_endpoint_failures_are_retrieval_errors(stub: str) -> None:
    _Stub.mode = "broken"
    with pytest.raises(RetrievalError, match="scored 1 of 3"):
        EndpointReranker(stub, "m").rerank("dog", CANDS, top_n=3)
    _Stub.fail_first = 5
    with pytest.raises(RetrievalError, match="HTTP 503"):
        EndpointReranker(stub, "m", max_retries=1, backoff=0.0).rerank("dog", CANDS, top_n=3)
    with pytest.raises(RetrievalError, match="failed"):
        EndpointReranker("http://127.0.0.1:9/v1", "m", max_retries=0, timeout=0.5).rerank("dog", CANDS, top_n=1)


def test_mmr_keeps_the_best_first_and_demotes_near_duplicates() -> None:
    cands = [
        RerankCandidate("a", "Pepper aced her first agility class", 1.0),
        RerankCandidate("dup", "Pepper aced her first agility class today", 0.95),
        RerankCandidate("other", "flights to Lisbon are booked for June", 0.6),
    ]
    assert [r.key for r in MMRReranker(1.0).rerank("q", cands, 3)] == ["a", "dup", "other"]
    assert [r.key for r in MMRReranker(0.3).rerank("q", cands, 3)] == ["a", "other", "dup"]
    assert MMRReranker(0.5).rerank("q", [], 3) == []


def test_reranker_specs() -> None:
    assert make_reranker(None) is None
    assert make_reranker("none") is None
    mmr = make_reranker("mmr:0.5")
    assert isinstance(mmr, MMRReranker) and mmr.lam == 0.5
    endpoint = make_reranker("endpoint:bge@http://localhost:8080/v1")
    assert isinstance(endpoint, EndpointReranker) and endpoint.url == "http://localhost:8080/v1/rerank"
    for bad in ("mmr:2", "mmr:x", "endpoint:bge", "endpoint:@http://x", "cohere", "endpoint:m@ftp://x"):
        with pytest.raises(ConfigError):
            make_reranker(bad)
    with pytest.raises(ConfigError, match="rerank_depth"):
        Config(rerank_depth=0)


def test_search_orders_hits_by_the_endpoint_and_explains_it(stub: str, tmp_path: Any) -> None:
    config = Config(data_dir=tmp_path, embedder="hash", reranker=f"endpoint:m@{stub}", rerank_depth=10)
    with Memory(tmp_path / "m.db", config=config) as memory:
        memory.add(
            [
                Message(role="user", content="The weather was grey all week."),
                Message(role="user", content="My dog Pepper is a border collie."),
                Message(role="user", content="Lisbon flights are booked."),
            ],
            user_id="u",
            infer=False,  # the three turns are the whole candidate pool
        )
        hits = memory.search("what breed is my dog Pepper", user_id="u", top_k=2)
    assert len(hits) == 2
    assert "Pepper" in hits[0].memory.text
    assert hits[0].breakdown["rerank"].rank == 1
    assert "endpoint:m@" in hits[0].triggers["rerank"]
    assert _Stub.requests and len(_Stub.requests[-1]["body"]["documents"]) == 3  # every candidate up to the depth
