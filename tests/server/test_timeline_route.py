"""``GET /v1/timeline``: ``Memory.timeline`` over REST, page by page through the encoded cursor, filtered, bound to
the key's tenant, and a 400 naming the problem for a bad cursor, filter or limit.
"""

from __future__ import annotations

import pytest

from memlane.models import MemoryKind
from memlane.records.timeline import TimelineFilter
from tests.timeline_refusals import REFUSED

TURNS = [f"I visited city number {i}" for i in range(5)]


def _fill(api, who="acme", user="ana"):
    for i, text in enumerate(TURNS):
        body = {"user_id": user, "messages": [text], "infer": False, "timestamp": f"2024-03-0{i + 1}T09:00:00Z"}
        r = api.client.post("/v1/memories", json=body, headers=api.h(who))
        assert r.status_code in (200, 201), r.text


def test_two_pages_through_the_cursor_are_the_librarys_timeline(api):
    _fill(api)
    h = api.h("acme_read")
    first = api.client.get("/v1/timeline", params={"user_id": "ana", "limit": 3}, headers=h)
    assert first.status_code == 200, first.text
    page1 = first.json()
    assert [m["text"] for m in page1["items"]] == [TURNS[4], TURNS[3], TURNS[2]]
    assert isinstance(page1["next"], str)
    second = api.client.get("/v1/timeline", params={"user_id": "ana", "limit": 3, "after": page1["next"]}, headers=h)
    assert second.status_code == 200, second.text
    page2 = second.json()
    assert [m["text"] for m in page2["items"]] == [TURNS[1], TURNS[0]] and page2["next"] is None
    library = api.memory.timeline(user_id="ana", limit=3, tenant="acme")
    assert [m["id"] for m in page1["items"]] == [m.id for m in library.items]
    assert library.next is not None and page1["next"] == library.next.encode()
    listed = api.client.get("/v1/memories", params={"user_id": "ana"}, headers=h).json()
    assert {m["id"]: m for m in listed}[page1["items"][0]["id"]] == page1["items"][0]  # the list route's shape


def test_a_filter_is_the_librarys(api):
    _fill(api)
    h = api.h("acme_read")
    messages = api.client.get("/v1/timeline", params={"user_id": "ana", "kind": "message"}, headers=h).json()
    assert len(messages["items"]) == len(TURNS) and messages["next"] is None
    facts = api.client.get("/v1/timeline", params={"user_id": "ana", "kind": "fact"}, headers=h).json()
    assert facts == {"items": [], "next": None}
    flagged = api.client.get("/v1/timeline", params={"user_id": "ana", "flagged_only": "true"}, headers=h).json()
    want = api.memory.timeline(user_id="ana", where=TimelineFilter(flagged_only=True), tenant="acme")
    assert [m["id"] for m in flagged["items"]] == [m.id for m in want.items]
    want = api.memory.timeline(user_id="ana", where=TimelineFilter(kind=MemoryKind.MESSAGE), tenant="acme")
    assert [m["id"] for m in messages["items"]] == [m.id for m in want.items]


def test_another_tenants_key_sees_nothing(api):
    _fill(api)
    r = api.client.get("/v1/timeline", params={"user_id": "ana"}, headers=api.h("globex"))
    assert r.status_code == 200 and r.json() == {"items": [], "next": None}
    mine = api.client.get("/v1/timeline", params={"user_id": "ana", "limit": 2}, headers=api.h("acme")).json()
    theirs = api.client.get(
        "/v1/timeline", params={"user_id": "ana", "after": mine["next"]}, headers=api.h("globex")
    ).json()
    assert theirs == {"items": [], "next": None}  # a cursor carries no tenant: it only says where to start
    assert api.client.get("/v1/timeline", params={"user_id": "ana"}).status_code == 401


@pytest.mark.parametrize(("params", "where"), REFUSED)
def test_bad_input_is_a_400_naming_the_problem(api, params, where):
    r = api.client.get("/v1/timeline", params={"user_id": "ana", **params}, headers=api.h("acme_read"))
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"detail", "errors"} and body["errors"]
    assert where in body["detail"]
