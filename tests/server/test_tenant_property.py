"""Property: two tenants' random operations, interleaved through the REST API with the same user ids, never leak
an id or a text across tenants, and every attempt on another tenant's id is the same 404 as on a missing one.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import make_api

TENANTS = ("acme", "globex")
USERS = ("ana", "bo")
WORDS = ("beagle", "Denver", "tea", "launch", "Friday", "guitar", "sister", "Biscuit")
NOT_FOUND = (404, {"detail": "not found", "errors": []})

op = st.tuples(
    st.sampled_from(("add", "add", "get", "update", "delete", "search", "list", "delete_all", "history")),
    st.sampled_from(TENANTS),
    st.sampled_from(USERS),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    st.integers(min_value=0, max_value=1000),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=5, max_size=30))
def test_interleaved_tenants_never_leak(ops):
    with tempfile.TemporaryDirectory() as tmp:
        for api in make_api(Path(tmp)):
            c = api.client
            owned: dict[tuple[str, str], dict[str, str]] = {(t, u): {} for t in TENANTS for u in USERS}
            for kind, tenant, user, text, pick in ops:
                h = api.h(tenant)
                mine = owned[(tenant, user)]
                every = sorted({i for ids in owned.values() for i in ids})
                target = every[pick % len(every)] if every and pick % 4 else uuid.uuid4().hex
                q = {"user_id": user}
                if kind == "add":
                    r = c.post("/v1/memories", json={**q, "messages": [text], "infer": False}, headers=h)
                    assert r.status_code == 200, r.text
                    for item in r.json()["items"]:
                        assert item["user_id"] == user
                        mine[item["id"]] = item["text"]
                elif kind in ("get", "update", "delete", "history"):
                    path = f"/v1/memories/{target}" + ("/history" if kind == "history" else "")
                    if kind == "update":
                        r = c.patch(path, json={**q, "text": text}, headers=h)
                    elif kind == "delete":
                        r = c.delete(path, params=q, headers=h)
                    else:
                        r = c.get(path, params=q, headers=h)
                    if target in mine:
                        assert r.status_code == 200, r.text
                        if kind == "update":
                            mine[target] = text
                        elif kind == "delete":
                            del mine[target]
                    else:
                        assert (r.status_code, r.json()) == NOT_FOUND
                elif kind == "search":
                    r = c.post("/v1/search", json={**q, "query": text, "top_k": 50}, headers=h)
                    for hit in r.json()["hits"]:
                        assert mine.get(hit["memory"]["id"]) == hit["memory"]["text"]
                elif kind == "list":
                    r = c.get("/v1/memories", params={**q, "limit": 1000}, headers=h)
                    assert {m["id"]: m["text"] for m in r.json()} == mine
                else:
                    r = c.delete("/v1/memories", params=q, headers=h)
                    assert r.json()["count"] == len(mine)
                    mine.clear()
            for (tenant, user), mine in owned.items():
                listed = c.get("/v1/memories", params={"user_id": user, "limit": 1000}, headers=api.h(tenant)).json()
                assert {m["id"]: m["text"] for m in listed} == mine
