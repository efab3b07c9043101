"""The REST edge keeps the limits of the store it serves: with ``max_text_chars`` and ``max_id_chars`` raised or
lowered (in the ``Config``, or by ``MEMLANE_MAX_TEXT_CHARS``/``MEMLANE_MAX_ID_CHARS`` for a server that opens its own
store), a text or an id of the limit is accepted, one more is refused with the one 400 shape naming the field, and
the OpenAPI document states the limit in effect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the REST server needs memlane[server]")

from fastapi.testclient import TestClient

from memlane import Memory
from memlane.config import Config
from memlane.server import AdminDB, ServerSettings, create_app

CURSOR_TIME = "2024-03-01T09:00:00+00:00|"  # a cursor is '<time>|<memory id>': the rest of its length is the id


class Edge:
    def __init__(self, client: TestClient, key: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {key}"}

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.client.post(path, json=body, headers=self.headers)

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(path, params=params, headers=self.headers)


def _edge(tmp_path: Path, memory: Memory | None = None, **settings: Any) -> Iterator[Edge]:
    server = ServerSettings(data_dir=tmp_path, rate_per_second=0, **settings)
    admin = AdminDB(server.admin_db)
    key = admin.create_key("acme", "read,write").secret
    with TestClient(create_app(server, memory=memory, admin=admin)) as client:
        yield Edge(client, key)
    admin.close()


@pytest.fixture(params=[(40_000, 300), (100, 40)], ids=["raised", "lowered"])
def limits(request: pytest.FixtureRequest) -> tuple[int, int]:
    return tuple(request.param)  # type: ignore[return-value]


@pytest.fixture
def edge(tmp_path: Path, limits: tuple[int, int]) -> Iterator[Edge]:
    text_chars, id_chars = limits
    config = Config(data_dir=tmp_path, background_worker=False, max_text_chars=text_chars, max_id_chars=id_chars)
    with Memory(":memory:", embedder="hash", config=config) as memory:
        yield from _edge(tmp_path, memory)


def _refused(r: Any, loc: list[str], limit: int) -> None:
    """The one 400 shape, its entry naming where and the limit in effect."""
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"detail", "errors"}, body
    assert [e["loc"] for e in body["errors"]] == [loc], body
    (entry,) = body["errors"]
    assert entry["type"] in ("string_too_long", "less_than_equal") and str(limit) in entry["msg"], entry
    assert body["detail"] == f"{'.'.join(loc)}: {entry['msg']}"


def test_a_text_of_the_limit_is_accepted_and_one_more_refused(edge: Edge, limits: tuple[int, int]) -> None:
    text_chars, _ = limits
    for path, field in (("/v1/search", "query"), ("/v1/context", "query"), ("/v1/ask", "question")):
        assert edge.post(path, {"user_id": "ana", field: "a" * text_chars}).status_code == 200, path
        _refused(edge.post(path, {"user_id": "ana", field: "a" * (text_chars + 1)}), ["body", field], text_chars)
    stored = edge.post("/v1/memories", {"user_id": "ana", "messages": ["b" * text_chars], "infer": False})
    assert stored.status_code == 200, stored.text
    mid = stored.json()["items"][0]["id"]
    r = edge.client.patch(
        f"/v1/memories/{mid}", json={"user_id": "ana", "text": "c" * (text_chars + 1)}, headers=edge.headers
    )
    _refused(r, ["body", "text"], text_chars)
    r = edge.post("/v1/documents", {"user_id": "ana", "documents": [{"text": "d" * (text_chars + 1)}]})
    assert r.status_code == 400 and set(r.json()) == {"detail", "errors"}, r.text  # one entry per union member
    (entry,) = [e for e in r.json()["errors"] if e["loc"] == ["body", "documents", 0, "DocumentIn", "text"]]
    assert entry["type"] == "string_too_long" and str(text_chars) in entry["msg"]


def test_an_id_of_the_limit_is_accepted_and_one_more_refused(edge: Edge, limits: tuple[int, int]) -> None:
    _, id_chars = limits
    user, over = "u" * id_chars, "u" * (id_chars + 1)
    assert edge.post("/v1/memories", {"user_id": user, "messages": ["hello"], "infer": False}).status_code == 200
    _refused(edge.post("/v1/memories", {"user_id": over, "messages": ["hello"]}), ["body", "user_id"], id_chars)
    assert edge.post("/v1/search", {"user_id": user, "query": "hello"}).json()["hits"]
    _refused(edge.post("/v1/search", {"user_id": over, "query": "hello"}), ["body", "user_id"], id_chars)
    for path in ("/v1/memories", "/v1/timeline"):  # a query parameter, in the app's routes and the route modules'
        assert edge.get(path, user_id=user).status_code == 200, path
        _refused(edge.get(path, user_id=over), ["query", "user_id"], id_chars)
    r = edge.post("/v1/memories", {"user_id": user, "messages": ["hi"], "session_id": "s" * (id_chars + 1)})
    _refused(r, ["body", "session_id"], id_chars)
    assert edge.get("/v1/graph", user_id=user, entity="e" * id_chars).status_code == 404  # no such entity, not a 400
    _refused(edge.get("/v1/graph", user_id=user, entity="e" * (id_chars + 1)), ["query", "entity"], id_chars)
    assert edge.get("/v1/relations", user_id=user, entity="e" * id_chars).json() == []
    _refused(edge.get("/v1/relations", user_id=user, entity="e" * (id_chars + 1)), ["query", "entity"], id_chars)


def test_a_timeline_cursor_is_as_long_as_the_library_makes_it(edge: Edge, limits: tuple[int, int]) -> None:
    _, id_chars = limits
    longest = CURSOR_TIME + "m" * (id_chars + 64 - len(CURSOR_TIME))
    assert edge.get("/v1/timeline", user_id="ana", after=longest).status_code == 200
    _refused(edge.get("/v1/timeline", user_id="ana", after=longest + "m"), ["query", "after"], id_chars + 64)


def test_the_openapi_document_states_the_limits_in_effect(edge: Edge, limits: tuple[int, int]) -> None:
    text_chars, id_chars = limits
    doc = edge.client.get("/openapi.json").json()
    search = doc["components"]["schemas"]["SearchRequest"]["properties"]
    assert (search["query"]["maxLength"], search["user_id"]["maxLength"]) == (text_chars, id_chars)
    params = {p["name"]: p["schema"] for p in doc["paths"]["/v1/timeline"]["get"]["parameters"]}
    assert params["user_id"]["maxLength"] == id_chars
    assert [s.get("maxLength") for s in params["after"]["anyOf"]] == [id_chars + 64, None]


def test_a_server_opening_its_own_store_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_MAX_TEXT_CHARS", "50")
    monkeypatch.setenv("MEMLANE_MAX_ID_CHARS", "40")
    monkeypatch.setenv("MEMLANE_INFER", "false")
    for edge in _edge(tmp_path, store=tmp_path / "memories.db", embedder="hash"):
        assert edge.post("/v1/search", {"user_id": "u" * 40, "query": "q" * 50}).status_code == 200
        _refused(edge.post("/v1/search", {"user_id": "ana", "query": "q" * 51}), ["body", "query"], 50)
        _refused(edge.post("/v1/search", {"user_id": "u" * 41, "query": "q"}), ["body", "user_id"], 40)
        doc = edge.client.get("/openapi.json").json()
        assert doc["components"]["schemas"]["SearchRequest"]["properties"]["query"]["maxLength"] == 50


def test_a_text_over_the_limit_in_a_message_is_the_librarys_400(edge: Edge, limits: tuple[int, int]) -> None:
    """A message's content is checked by the library alone (a message is a union of shapes): the same 400 shape."""
    text_chars, _ = limits
    r = edge.post("/v1/memories", {"user_id": "ana", "messages": ["m" * (text_chars + 1)]})
    assert r.status_code == 400 and set(r.json()) == {"detail", "errors"}, r.text
    assert f"more than the limit of {text_chars}" in r.json()["detail"]


def test_the_inspector_pages_follow_the_limits_too(edge: Edge, limits: tuple[int, int]) -> None:
    text_chars, id_chars = limits
    login = edge.client.post("/ui/login", data={"key": edge.headers["Authorization"][7:]}, follow_redirects=False)
    assert login.status_code == 303, login.text
    longest = CURSOR_TIME + "m" * (id_chars + 64 - len(CURSOR_TIME))
    assert edge.client.get("/ui/u/ana", params={"after": longest}).status_code == 200
    assert edge.client.get("/ui/u/ana", params={"after": longest + "m"}).status_code == 400
    assert edge.client.get("/ui/u/ana/search", params={"q": "q" * text_chars}).status_code == 200
    assert edge.client.get("/ui/u/ana/search", params={"q": "q" * (text_chars + 1)}).status_code == 400
