"""A message the library refuses is named by its place in the request body (``errors[].loc``), as a schema error is."""

from __future__ import annotations

import pickle

import pytest

from memlane.errors import ValidationError
from memlane.security.validation import check_messages
from tests.server.conftest import Api


@pytest.mark.parametrize(
    ("messages", "loc"),
    [
        ([{"role": "user", "content": "x" * 40_000}], ["body", "messages", 0, "content"]),
        (["fine", {"role": "user", "content": ""}], ["body", "messages", 1, "content"]),
        (["a\u0000b"], ["body", "messages", 0, "content"]),
        ([{"role": "user", "content": "hi", "name": "x" * 500}], ["body", "messages", 0, "name"]),
        ([{"role": "r" * 500, "content": "hi"}], ["body", "messages", 0, "role"]),
        ([{"role": "user", "content": "hi", "metadata": {"k": "v" * 70_000}}], ["body", "messages", 0, "metadata"]),
    ],
)
def test_a_refused_message_is_located_in_the_body(api: Api, messages: list[object], loc: list[object]) -> None:
    r = api.client.post("/v1/memories", json={"user_id": "ana", "messages": messages}, headers=api.h("acme"))
    assert r.status_code == 400, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == loc and error["msg"] == r.json()["detail"] and error["type"] == "ValidationError"
    assert api.client.get("/v1/memories", params={"user_id": "ana"}, headers=api.h("acme")).json() == []


def test_an_error_without_a_field_keeps_an_empty_loc(api: Api) -> None:
    r = api.client.post("/v1/search", json={"user_id": "ana", "query": "q", "preset": "nope"}, headers=api.h("acme"))
    assert r.status_code == 400 and r.json()["errors"][0]["loc"] == []


def test_the_library_error_carries_the_field_and_survives_pickling() -> None:
    with pytest.raises(ValidationError) as info:
        check_messages(["ok", {"role": "user", "content": " "}])
    assert info.value.loc == ("messages", 1, "content")
    again = pickle.loads(pickle.dumps(info.value))
    assert again.loc == ("messages", 1, "content") and str(again) == str(info.value)
