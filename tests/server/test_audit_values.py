"""The append-only audit log keeps the action, the ids and the outcome of a call, never a value of the request: a
user's text must not outlive ``delete_all`` there (nor in the WAL of its file)."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import Api

SECRET = "Zq7-my-bank-pin-is-4711"


def _bytes_of(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.glob("server.db*"))


def test_a_refused_requests_values_never_reach_the_audit_log(api: Api, tmp_path: Path) -> None:
    h = api.h("acme_admin")
    bad = [
        ("/v1/search", {"user_id": "ana", "query": "q", "filters": {"since": SECRET}}),
        ("/v1/search", {"user_id": "ana", "query": "q", "filters": {SECRET: 1}}),
        ("/v1/search", {"user_id": "ana", "query": "q", "preset": SECRET}),
    ]
    for path, body in bad:
        r = api.client.post(path, json=body, headers=h)
        assert r.status_code == 400, r.text
    assert api.client.delete("/v1/memories", params={"user_id": "ana"}, headers=h).status_code == 200
    lines = api.client.get("/admin/audit", headers=h).json()
    assert [line["action"] for line in lines][:3] == ["search"] * 3
    assert all(line["status"] == 400 and line["detail"] for line in lines[:3])  # the kind of error is kept
    assert SECRET not in str(lines)
    assert SECRET.encode() not in _bytes_of(tmp_path)
