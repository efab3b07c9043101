"""The routes that bring REST to parity with the library: ask, graph and relations, observations, routines, the
archive, a job's result by its id alone, key management; each bound to the key's tenant; stable operation ids.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from memlane import Memory
from memlane.config import Config
from memlane.server import AdminDB, ServerSettings, create_app
from memlane.server.routes import OPERATION_IDS

TEXT = "My sister Mel lives in Denver. I adopted a beagle called Biscuit."


def queued(api, who="acme", user="ana", text=TEXT):
    r = api.client.post("/v1/memories", json={"user_id": user, "messages": [text], "async": True}, headers=api.h(who))
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    tenant = "globex" if who.startswith("globex") else "acme"
    api.memory.wait(job_id, user_id=user, tenant=tenant, timeout=30)
    return job_id


def test_job_result_by_id_alone_lists_what_it_wrote_and_stays_in_its_tenant(api):
    job_id = queued(api)
    r = api.client.get(f"/v1/jobs/{job_id}/result", headers=api.h("acme_read"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["job"]["id"] == job_id and body["job"]["user_id"] == "ana" and body["job"]["state"] == "done"
    expected = api.memory.job_result(job_id, tenant="acme")
    assert [m["id"] for m in body["memories"]] == [m.id for m in expected.memories]
    assert body["memories"], "the rule extractor reads a fact from this message"
    message_ids = set(body["job"]["payload"]["message_ids"])
    for m in body["memories"]:
        assert m["kind"] != "message" and message_ids & {s["memory_id"] for s in m["sources"]}
    assert api.client.get(f"/v1/jobs/{job_id}/result", headers=api.h("globex")).status_code == 404
    assert api.client.get("/v1/jobs/nope/result", headers=api.h("acme")).status_code == 404


def test_ask_graph_and_relations(api):
    queued(api)
    h = api.h("acme_read")
    answer = api.client.post("/v1/ask", json={"user_id": "ana", "question": "Where does Mel live?"}, headers=h)
    assert answer.status_code == 200, answer.text
    assert answer.json()["route"] in ("structured", "search") and answer.json()["hits"]
    graph = api.client.get("/v1/graph", params={"user_id": "ana", "entity": "my sister"}, headers=h).json()
    assert graph["node"]["display"] == "Mel" and "my sister" in graph["node"]["aliases"]
    rels = api.client.get("/v1/relations", params={"user_id": "ana", "entity": "Mel"}, headers=h).json()
    assert {(r["subject"], r["predicate"], r["object"]) for r in rels} >= {("mel", "lives_in", "denver")}
    missing = api.client.get("/v1/graph", params={"user_id": "ana", "entity": "Zed"}, headers=h)
    assert missing.status_code == 404
    other = api.client.get("/v1/graph", params={"user_id": "ana", "entity": "Mel"}, headers=api.h("globex"))
    assert other.status_code == 404


def test_observe_routines_archive_restore(api):
    h = api.h("acme")
    obs = {"caption": "[person_1:Person] walks [dog_1:Dog] in the park", "timestamp": "2024-03-02T09:00:00Z"}
    body = {"user_id": "ana", "observations": [{**obs, "names": {"person_1": "Dana"}}]}
    r = api.client.post("/v1/observations", json=body, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["items"][0]["role"] == "observation" and "Dana" in r.json()["items"][0]["text"]
    again = api.client.post("/v1/observations", json=body, headers=h).json()
    assert again["duplicates"] == [r.json()["items"][0]["id"]]
    for day in range(1, 5):
        api.memory.add(
            "I go running in the park every morning",
            user_id="ana",
            tenant="acme",
            timestamp=f"2024-03-0{day}T07:00:00Z",
            infer=False,
        )
    found = api.client.post("/v1/routines", json={"user_id": "ana", "min_occurrences": 3}, headers=h)
    assert found.status_code == 200, found.text
    assert [m["kind"] for m in found.json()] == ["routine"] * len(found.json()) and found.json()
    assert api.client.post("/v1/routines", json={"user_id": "ana"}, headers=api.h("acme_read")).status_code == 403
    assert api.client.get("/v1/archive", params={"user_id": "ana"}, headers=h).json() == []
    r = api.client.post("/v1/archive/nope/restore", json={"user_id": "ana"}, headers=h)
    assert r.status_code == 404


def test_restore_brings_an_archived_memory_back(tmp_path):
    settings = ServerSettings(data_dir=tmp_path)
    admin = AdminDB(settings.admin_db)
    key = {"Authorization": f"Bearer {admin.create_key('acme', 'read,write').secret}"}
    config = Config(data_dir=tmp_path, background_worker=False, capacity=2, evict_messages=True)
    with (
        Memory(":memory:", embedder="hash", config=config) as memory,
        TestClient(create_app(settings, memory=memory, admin=admin)) as client,
    ):
        for text in ("I like green tea", "My bike is blue", "The meeting is on Tuesday"):
            memory.add(text, user_id="ana", tenant="acme", infer=False)
        evicted = [a.memory.id for a in memory.archive(user_id="ana", tenant="acme")]
        assert evicted, "three memories over a capacity of two: one goes to the archive"
        listed = client.get("/v1/archive", params={"user_id": "ana"}, headers=key).json()
        assert {a["memory"]["id"] for a in listed} == set(evicted)
        r = client.post(f"/v1/archive/{evicted[0]}/restore", json={"user_id": "ana"}, headers=key)
        assert r.status_code == 200 and r.json()["id"] == evicted[0]
        assert client.get(f"/v1/memories/{evicted[0]}", params={"user_id": "ana"}, headers=key).status_code == 200
        left = client.get("/v1/archive", params={"user_id": "ana"}, headers=key).json()
        assert evicted[0] not in {a["memory"]["id"] for a in left}
    admin.close()


def test_key_management_is_admin_only_and_per_tenant(api):
    h = api.h("acme_admin")
    assert api.client.get("/admin/keys", headers=api.h("acme")).status_code == 403
    r = api.client.post("/admin/keys", json={"scopes": ["read"], "name": "bot"}, headers=h)
    assert r.status_code == 201, r.text
    new = r.json()
    assert (
        new["tenant"] == "acme"
        and new["scopes"] == ["read"]
        and re.fullmatch(r"ml_[0-9a-f]{12}_[0-9a-f]{64}", new["secret"])
    )
    listed = api.client.get("/admin/keys", headers=h).json()
    assert new["prefix"] in {k["prefix"] for k in listed}
    assert {k["tenant"] for k in listed} == {"acme"} and all("secret" not in k for k in listed)
    works = api.client.get(
        "/v1/memories", params={"user_id": "ana"}, headers={"Authorization": f"Bearer {new['secret']}"}
    )
    assert works.status_code == 200
    assert api.client.delete(f"/admin/keys/{new['prefix']}", headers=api.h("globex_admin")).status_code == 404
    revoked = api.client.delete(f"/admin/keys/{new['prefix']}", headers=h)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    gone = api.client.get(
        "/v1/memories", params={"user_id": "ana"}, headers={"Authorization": f"Bearer {new['secret']}"}
    )
    assert gone.status_code == 401
    bad = api.client.post("/admin/keys", json={"scopes": ["root"]}, headers=h)
    assert 400 <= bad.status_code < 500 and "scopes" in bad.text


def test_every_operation_has_a_stable_snake_case_id_and_a_declared_tag(api):
    doc = api.client.get("/openapi.json").json()
    ops = [op for path in doc["paths"].values() for op in path.values()]
    ids = [op["operationId"] for op in ops]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", i) for i in ids), ids
    assert set(OPERATION_IDS.values()) <= set(ids)
    for wanted in ("add_memories", "search", "get_memory", "list_memories", "update_memory", "delete_memory", "ask"):
        assert wanted in ids
    declared = {t["name"] for t in doc["tags"]}
    assert {t for op in ops for t in op["tags"]} == declared
    assert doc["servers"] and doc["servers"][0]["url"] == "/"


def test_query_memories_takes_the_librarys_filters(api):
    queued(api)
    h = api.h("acme_read")
    facts = api.client.post("/v1/memories/query", json={"user_id": "ana", "filters": {"kind": "fact"}}, headers=h)
    assert facts.status_code == 200, facts.text
    want = api.memory.list(user_id="ana", tenant="acme", filters={"kind": "fact"})
    assert [m["id"] for m in facts.json()] == [m.id for m in want] and want
    bad = api.client.post("/v1/memories/query", json={"user_id": "ana", "filters": {"colour": "red"}}, headers=h)
    assert bad.status_code == 400 and "colour" in bad.json()["detail"]
    other = api.client.post("/v1/memories/query", json={"user_id": "ana"}, headers=api.h("globex"))
    assert other.json() == []


def test_maintenance_routes(api):
    queued(api)
    h = api.h("acme")
    assert api.client.post("/v1/forget", json={"user_id": "ana"}, headers=h).json() == []  # no capacity set
    assert api.client.post("/v1/jobs/retry", json={"user_id": "ana"}, headers=h).json() == {"count": 0}
    mid = api.memory.list(user_id="ana", tenant="acme")[0].id
    split = {"user_id": "ana", "entity": "Mel", "new_name": "Melanie", "memory_ids": [mid]}
    assert api.client.post("/v1/entities/split", json=split, headers=h).json() == {"count": 1}
    merged = api.client.post(
        "/v1/entities/merge", json={"user_id": "ana", "source": "Melanie", "target": "Mel"}, headers=h
    )
    assert merged.status_code == 200 and merged.json()["count"] >= 1
    unknown = {"user_id": "ana", "source": "Nobody", "target": "Mel"}
    assert api.client.post("/v1/entities/merge", json=unknown, headers=h).status_code == 404
    assert (
        api.client.post("/v1/entities/merge", json={**unknown, "source": "Denver"}, headers=api.h("globex")).status_code
        == 404
    )


def test_each_operation_documents_its_own_errors(api):
    doc = api.client.get("/openapi.json").json()
    responses = {op["operationId"]: set(op["responses"]) for ops in doc["paths"].values() for op in ops.values()}
    assert not responses["health"] & {"401", "403", "429", "503"}
    assert {"401", "403", "404"} <= responses["get_memory"] and "409" not in responses["get_memory"]
    assert "404" not in responses["search"] and "409" in responses["search"]
    assert "504" not in set().union(*responses.values())
