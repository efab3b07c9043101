"""``MemlaneStore`` in LangGraph's own flow: a compiled ``StateGraph`` whose nodes write and search memory through
``runtime.store``, over an embedded ``Memory`` and over a ``Client`` of a real ``memlane serve``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypedDict

import anyio
import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition

from memlane import Memory
from memlane.errors import ValidationError
from memlane.integrations.langgraph import MemlaneStore, MemoryLike


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    runtime.store.put((state["user"], "chat"), f"turn-{len(state['said'])}", {"text": state["said"], "n": 1})
    return {}


def recall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    found = runtime.store.search((state["user"],), query="what is my dog called?", limit=2)
    return {"recalled": [item.value["text"] for item in found]}


def graph(store: MemlaneStore) -> Any:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def exercise(memory: MemoryLike) -> None:
    store = MemlaneStore(memory)
    app = graph(store)
    for said in ("My sister lives in Lisbon", "I work as a nurse", "My dog is called Pepper"):
        out = app.invoke({"user": "maya", "said": said, "recalled": []})
    assert out["recalled"][0] == "My dog is called Pepper"
    # the item is a memlane memory of user maya, agent "chat"
    (stored,) = [m for m in memory.list(user_id="maya") if m.text == "My dog is called Pepper"]
    assert stored.agent_id == "chat" and stored.metadata["langgraph_key"] == "turn-23"

    ns = ("maya", "chat")
    item = store.get(ns, "turn-23")
    assert item is not None and item.value == {"text": "My dog is called Pepper", "n": 1} and item.namespace == ns
    store.put(ns, "turn-23", {"text": "My dog is called Biscuit", "n": 2})  # same key: an update, not a new memory
    updated = store.get(ns, "turn-23")
    assert updated is not None and updated.value["n"] == 2
    assert [i.value["text"] for i in store.search(("maya",), query="dog name", limit=1)] == ["My dog is called Biscuit"]
    assert len(store.search(("maya", "chat"), limit=10)) == 3
    assert [i.key for i in store.search(("maya",), filter={"text": "I work as a nurse"})] == ["turn-17"]
    assert store.list_namespaces(prefix=("maya",)) == [ns]
    store.put(("maya", "notes"), "k", {"topic": "garden"})  # no text field: the value as JSON is the text
    assert store.list_namespaces(prefix=("maya",), max_depth=1) == [("maya",)]
    assert len(store.list_namespaces(prefix=("maya",))) == 2
    store.delete(ns, "turn-23")
    assert store.get(ns, "turn-23") is None
    assert store.batch([GetOp(ns, "turn-17"), GetOp(("bob", "chat"), "turn-17")])[1] is None  # users are apart
    assert anyio.run(store.aget, ns, "turn-17") is not None
    with pytest.raises(ValidationError, match="user_id"):
        store.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("chat",)),))])


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory(":memory:", embedder="hash") as m:
        yield m


def test_a_graph_uses_the_store_over_memory(memory: Memory) -> None:
    exercise(memory)


def test_a_graph_uses_the_store_over_a_client(tmp_path: Any) -> None:
    pytest.importorskip("fastapi", reason="starts a real server: memlane[server]")
    pytest.importorskip("httpx", reason="the HTTP client needs memlane[client]")
    from memlane.bench.load import spawned_server
    from memlane.client import Client

    with spawned_server("hash", tmp_path) as (url, key), Client(url, api_key=key) as client:
        exercise(client)


def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = readme.split("\n## LangGraph\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    assert 'Memory("memories.db")' in code
    code = code.replace('Memory("memories.db")', 'Memory(":memory:", embedder="hash")')
    exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.strip() == "['I adopted a border collie called Pepper']"
