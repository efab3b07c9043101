"""/metrics counts and times each library operation and reports the job queue's depth."""

from __future__ import annotations

import re

from memlane import telemetry
from tests.server.conftest import make_api


def value(text: str, name: str, labels: str = "") -> float:
    m = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.M)
    assert m, f"{name}{labels} not in the exposition"
    return float(m.group(1))


def test_operations_and_queue_depth(tmp_path):
    for api in make_api(tmp_path):
        h = api.h("acme")
        r = api.client.post("/v1/memories", json={"user_id": "ana", "messages": ["I adopted a beagle"]}, headers=h)
        assert r.status_code == 200
        assert api.client.post("/v1/search", json={"user_id": "ana", "query": "beagle"}, headers=h).status_code == 200
        assert api.client.post("/v1/search", json={"user_id": "ana", "query": ""}, headers=h).status_code in (400, 422)
        r = api.client.post(
            "/v1/memories", json={"user_id": "ana", "messages": ["I moved to Denver"], "async": True}, headers=h
        )
        assert r.status_code == 202  # the test app runs no background worker: the job stays queued
        text = api.client.get("/metrics", headers=api.h("acme_admin")).text
        assert value(text, "memlane_operations_total", '{operation="add",outcome="ok"}') == 2
        assert value(text, "memlane_operations_total", '{operation="search",outcome="ok"}') == 1
        assert value(text, "memlane_operation_duration_seconds_count", '{operation="search"}') >= 1
        assert value(text, "memlane_job_queue_depth") == 1
    assert not telemetry.enabled()  # the server's recorder left with the app
