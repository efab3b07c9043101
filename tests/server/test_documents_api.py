"""``POST /v1/documents``: documents stored per tenant, duplicates reported, bad input a 400 naming it."""

from __future__ import annotations

from tests.server.conftest import Api


def post(api: Api, who: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    r = api.client.post("/v1/documents", json=body, headers=api.h(who))
    return r.status_code, r.json()


def test_documents_are_stored_in_the_callers_tenant(api: Api) -> None:
    status, body = post(
        api,
        "acme",
        {
            "user_id": "ana",
            "documents": [
                "A note about the okapi.",
                {"text": "Rebase rewrites history.", "title": "git", "source": "faq"},
            ],
        },
    )
    assert status == 200
    items = body["items"]
    assert isinstance(items, list) and [i["kind"] for i in items] == ["document", "document"]
    assert items[1]["metadata"] == {"title": "git", "source": "faq"} and items[1]["session_id"] is None
    again = post(api, "acme", {"user_id": "ana", "documents": ["A note about the okapi."]})[1]
    assert again["duplicates"] == [items[0]["id"]]
    r = api.client.post("/v1/search", json={"user_id": "ana", "query": "okapi"}, headers=api.h("globex"))
    assert r.status_code == 200 and r.json()["hits"] == []
    r = api.client.post("/v1/search", json={"user_id": "ana", "query": "okapi", "top_k": 1}, headers=api.h("acme"))
    hit = r.json()["hits"][0]
    assert hit["memory"]["id"] == items[0]["id"] and hit["passage"]["count"] == 1


def test_bad_documents_are_refused_by_name(api: Api) -> None:
    status, body = post(api, "acme", {"user_id": "ana", "documents": [{"text": "x", "colour": "red"}]})
    assert status == 400 and "colour" in str(body) and body["errors"]
    status, body = post(api, "acme", {"user_id": "ana", "documents": [{"text": "x", "timestamp": "yesterday"}]})
    assert status == 400 and "document 0" in str(body["detail"])
    status, body = post(api, "acme", {"user_id": "ana", "documents": []})
    assert status == 400 and body["errors"]
    assert post(api, "acme_read", {"user_id": "ana", "documents": ["x"]})[0] == 403
