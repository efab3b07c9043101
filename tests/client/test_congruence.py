"""One scenario through ``Memory``, ``Client`` and ``AsyncClient`` (against a real ``memlane serve``): the results
are the same field by field, ids and wall-clock times aside, and so are the errors' classes.

Ids are not dropped but renamed in order of first appearance, so that which id stands where is compared too.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from memlane import Config, Memory
from memlane.client import AsyncClient, Client
from memlane.errors import (
    EmbedderMismatchError,
    JobTimeoutError,
    MemlaneError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from memlane.models import MemoryKind
from memlane.records.timeline import TimelineFilter
from tests.client.conftest import Served

#: Wall-clock times of the run (when stored, accessed, flagged, archived): everything else must agree.
NONCE = re.compile(r"memory-[0-9a-f]{12}")
CLOCK = {"created_at", "updated_at", "last_accessed", "at", "archived_at", "flagged_at", "not_before"}
HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
Call = Callable[..., Any]

TURNS = [
    {"role": "user", "content": "My sister Mel lives in Denver.", "timestamp": "2024-03-01T09:00:00Z"},
    {"role": "user", "content": "I adopted a beagle called Biscuit.", "timestamp": "2024-03-02T09:00:00Z"},
    {"role": "user", "content": "I prefer green tea over coffee.", "timestamp": "2024-03-03T09:00:00Z"},
]


def plain(value: Any) -> Any:
    """A result as JSON-able data (models, dataclasses, lists of them)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return TypeAdapter(type(value)).dump_python(value, mode="json") if value is not None else None


def rest_class(exc: MemlaneError) -> str:
    """The error's class as far as an HTTP status can carry it: a subclass (``UnknownFilterError``) arrives as the
    class its status stands for (``ValidationError``).
    """
    for cls in type(exc).__mro__:
        if cls in (ValidationError, NotFoundError, EmbedderMismatchError, JobTimeoutError, StoreError):
            return cls.__name__
    return type(exc).__name__


def scenario(call: Call) -> Iterator[tuple[str, Any]]:
    """The steps, each yielding ``(label, result)``; an error is recorded as its class name."""

    def step(label: str, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            result = call(method, *args, **kwargs)
        except MemlaneError as exc:
            return label, f"error {rest_class(exc)}"
        return label, result

    added = call("add", TURNS, user_id="ana", session_id="s1")
    yield "add", added
    yield step("add again (duplicates)", "add", TURNS[:1], user_id="ana", session_id="s1")
    queued = call("add", "I go running in the park every morning", user_id="ana", timestamp="2024-03-04T07:00:00Z",
                  async_mode=True)  # fmt: skip
    yield "add async", queued
    yield step("wait", "wait", queued.job_id, user_id="ana", timeout=60)
    yield step("job", "job", queued.job_id, user_id="ana")
    yield step("jobs", "jobs", user_id="ana")
    yield step("job result", "job_result", queued.job_id)
    hits = call("search", "Where does my sister live?", user_id="ana", top_k=5)
    yield "search (explained)", hits
    yield step("search filtered", "search", "beagle", user_id="ana", filters={"kind": "fact"})
    yield step("context", "context", "sister Denver", user_id="ana", token_budget=300)
    yield step("ask", "ask", "Where does Mel live?", user_id="ana", now="2024-04-01T00:00:00Z")
    first = added.items[0].id
    yield step("get", "get", first, user_id="ana")
    yield step("list", "list", user_id="ana", limit=50)
    yield step("list by session", "list", user_id="ana", filters={"session_id": "s1"})
    yield step("list facts", "list", user_id="ana", filters={"kind": ["fact", "preference"]})
    yield step("list since", "list", user_id="ana", filters={"since": "2024-03-02T00:00:00Z", "role": "user"}, limit=2)
    yield step("list unknown filter", "list", user_id="ana", filters={"colour": "red"})
    page = call("timeline", user_id="ana", limit=2)
    yield "timeline", page
    yield step("timeline next page", "timeline", user_id="ana", limit=2, after=page.next)
    yield step("timeline next page (encoded)", "timeline", user_id="ana", limit=2, after=page.next.encode())
    yield step("timeline of facts", "timeline", user_id="ana", where=TimelineFilter(kind=MemoryKind.FACT))
    yield step("timeline of an entity", "timeline", user_id="ana", where=TimelineFilter(entity="my sister"))
    yield step("timeline bad cursor", "timeline", user_id="ana", after="yesterday|abc")
    yield step("timeline limit zero", "timeline", user_id="ana", limit=0)
    yield step("timeline kind as text", "timeline", user_id="ana", where=TimelineFilter(kind="fact"))  # type: ignore[arg-type]
    yield step("update", "update", first, user_id="ana", text="My sister Mel moved to Boulder.", importance=0.9)
    yield step("history", "history", first, user_id="ana")
    yield step("feedback", "feedback", hits[0], useful=True)
    yield step("graph", "graph", "Mel", user_id="ana")
    yield step("relations", "relations", user_id="ana", entity="Mel")
    obs = {"caption": "[person_1:Person] walks [dog_1:Dog] by the lake", "timestamp": "2024-03-05T08:00:00Z",
           "names": {"person_1": "Dana"}}  # fmt: skip
    yield step("observe", "observe", [obs], user_id="ana")
    for day in (6, 7, 8):
        call("add", "I went swimming at the pool", user_id="ana", timestamp=f"2024-03-0{day}T18:00:00Z", infer=False)
    yield step("routines", "routines", user_id="ana", min_occurrences=3)
    yield step("archive", "archive", user_id="ana")
    yield step("forget", "forget", user_id="ana")
    yield step("retry jobs", "retry_jobs", user_id="ana")
    yield step("split entity", "split_entity", "Mel", "Melanie", user_id="ana", memory_ids=[added.items[0].id])
    yield step("merge entities", "merge_entities", "Melanie", "Mel", user_id="ana")
    yield step("merge unknown", "merge_entities", "Nobody", "Mel", user_id="ana")
    yield step("stats", "stats", user_id="ana")
    buf = io.StringIO()
    yield step("export", "export", buf, user_id="ana")
    yield "export text", [json.loads(line) for line in buf.getvalue().splitlines()]
    yield step("delete", "delete", added.items[1].id, user_id="ana")
    yield step("delete all", "delete_all", user_id="ana")
    yield step("import", "import_", io.StringIO(buf.getvalue()), user_id="ana")
    yield step("list after import", "list", user_id="ana", limit=100)
    # errors: the same classes
    yield step("get missing", "get", "0" * 32, user_id="ana")
    yield step("restore missing", "restore", "0" * 32, user_id="ana")
    yield step("graph unknown", "graph", "Zebulon", user_id="ana")
    yield step("empty message", "add", "", user_id="ana")
    yield step("top_k zero", "search", "tea", user_id="ana", top_k=0)
    yield step("bad job state", "jobs", user_id="ana", state="sleeping")
    yield step("job of nobody", "job_result", "f" * 32)


def transcript(call: Call) -> list[tuple[str, Any]]:
    """The scenario's results as data, ids renamed by first appearance and wall-clock times dropped."""
    names: dict[str, str] = {}

    def norm(value: Any, key: str = "") -> Any:
        if key in ("id", "superseded_by") and isinstance(value, int):  # a relation's row id
            return names.setdefault(f"relation {value}", f"<id {len(names)}>")
        if isinstance(value, dict):
            return {k: norm(v, k) for k, v in value.items() if k not in CLOCK}
        if isinstance(value, list):
            return [norm(v) for v in value]
        if isinstance(value, str):
            value = NONCE.sub("memory-<nonce>", value)  # the context fence's tags carry a nonce drawn per call
            return HEX_ID.sub(lambda m: names.setdefault(m.group(0), f"<id {len(names)}>"), value)
        return value

    return [(label, norm(plain(result))) for label, result in scenario(call)]


def drop_store_location(steps: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The stats' path and size name the store, not the data (shown to admin keys only over REST)."""
    out = []
    for label, value in steps:
        if label == "stats" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in ("path", "size_bytes")}
        out.append((label, value))
    return out


def embedded(home: Path, tenant: str) -> list[tuple[str, Any]]:
    """The scenario through the library, in ``tenant`` (a content hash is of the scope, so of its tenant too)."""
    with Memory(home / "memlane.db", embedder="hash", config=Config.from_env().with_(data_dir=home)) as memory:
        return drop_store_location(transcript(lambda name, *a, **kw: getattr(memory, name)(*a, tenant=tenant, **kw)))


def differences(want: Any, have: Any, path: str = "") -> list[str]:
    """Where two results differ, as paths (``items[0].speaker``)."""
    if isinstance(want, dict) and isinstance(have, dict):
        return [d for k in want.keys() | have.keys() for d in differences(want.get(k), have.get(k), f"{path}.{k}")]
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        return [d for i, (a, b) in enumerate(zip(want, have, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if want == have else [f"{path}: library {want!r:.200} / client {have!r:.200}"]


def compare(expected: list[tuple[str, Any]], got: list[tuple[str, Any]]) -> None:
    assert [label for label, _ in got] == [label for label, _ in expected]
    wrong = [
        f"{label}{d}" for (label, want), (_, have) in zip(expected, got, strict=True) for d in differences(want, have)
    ]
    assert not wrong, "\n".join(wrong[:40])


def test_the_scenario_does_what_it_says(tmp_path: Path):
    """The scenario exercises what it claims to: extraction, a job that wrote memories, explained hits, errors."""
    steps = dict(embedded(tmp_path, "default"))
    assert steps["add"]["memories"], "extraction read typed memories from the turns"
    assert steps["job result"]["job"]["state"] == "done" and steps["job result"]["memories"]
    assert steps["search (explained)"][0]["breakdown"]
    assert steps["graph"]["node"]["display"] == "Mel"
    assert steps["routines"] and steps["export"] > 0 and steps["import"] == steps["export"]
    assert len(steps["timeline"]["items"]) == 2 and steps["timeline"]["next"]
    assert steps["timeline next page"] == steps["timeline next page (encoded)"]
    assert steps["timeline next page"]["items"] and steps["timeline of facts"]["items"]
    assert steps["timeline bad cursor"] == steps["timeline limit zero"] == "error ValidationError"
    assert steps["timeline kind as text"] == "error ValidationError"
    assert steps["get missing"] == "error NotFoundError" and steps["empty message"] == "error ValidationError"
    assert steps["top_k zero"] == "error ValidationError" and steps["job of nobody"] == "error NotFoundError"
    assert (
        steps["split entity"] == 1 and steps["merge entities"] >= 1 and steps["merge unknown"] == "error NotFoundError"
    )


def test_client_gives_the_library_results(served: Served, tmp_path: Path):
    with Client(served.url, api_key=served.key("sync")) as client:
        got = drop_store_location(transcript(lambda name, *a, **kw: getattr(client, name)(*a, **kw)))
    compare(embedded(tmp_path, "sync"), got)


def test_async_client_gives_the_library_results(served: Served, tmp_path: Path):
    loop = asyncio.new_event_loop()
    client = AsyncClient(served.url, api_key=served.key("async"))
    try:
        got = transcript(lambda name, *a, **kw: loop.run_until_complete(getattr(client, name)(*a, **kw)))
        compare(embedded(tmp_path, "async"), drop_store_location(got))
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()


def test_signatures_are_the_librarys(served: Served):
    import inspect

    from memlane.client import transport

    for name in [n for n in vars(Client) if not n.startswith("_")]:
        if name in ("run", "close", "create_key", "list_keys", "revoke_key"):
            continue
        want = inspect.signature(getattr(Memory, name))
        for cls in (Client, transport.AsyncClient):
            have = inspect.signature(getattr(cls, name))
            strip = [p for p in want.parameters.values() if p.name != "self"]
            assert [(p.name, p.kind, p.default) for p in have.parameters.values()] == [
                (p.name, p.kind, p.default) for p in strip
            ], f"{cls.__name__}.{name}"


def test_export_to_a_path_and_errors_of_the_transport(served: Served, tmp_path: Path):
    from memlane.client import AuthenticationError, PermissionDeniedError, ServerUnavailableError

    with Client(served.url, api_key=served.key("paths")) as client:
        client.add("I keep bees", user_id="zoe", infer=False)
        assert client.export(tmp_path / "out.jsonl", user_id="zoe") == 1
        assert "I keep bees" in (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    with Client(served.url, api_key="ml_" + "0" * 12 + "_" + "0" * 64) as stranger, pytest.raises(AuthenticationError):
        stranger.list(user_id="zoe")
    with Client(served.url, api_key=served.key("paths", "read")) as reader, pytest.raises(PermissionDeniedError):
        reader.add("x", user_id="zoe")
    with Client("http://127.0.0.1:9", api_key="k", timeout=2) as nowhere, pytest.raises(ServerUnavailableError):
        nowhere.stats(user_id="zoe")
