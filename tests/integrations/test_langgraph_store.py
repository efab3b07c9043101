"""``MemlaneStore`` in LangGraph's own flow: a compiled ``StateGraph`` whose nodes write and search memory through
``runtime.store``, run by ``invoke`` (sync nodes) and by ``ainvoke`` (async nodes, and sync nodes on LangGraph's
worker threads), over an embedded ``Memory``, a ``Client`` and an ``AsyncClient`` of a real ``memlane serve``."""

from __future__ import annotations

import re
from typing import Any, TypedDict

import anyio
import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition

from memlane.errors import ConfigError, ValidationError
from memlane.integrations.calls import acall
from memlane.integrations.langgraph import MemlaneStore
from tests.integrations.conftest import Backend

SAID = ("My sister lives in Lisbon", "I work as a nurse", "My dog is called Pepper")


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


async def aremember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    await runtime.store.aput((state["user"], "chat"), f"turn-{len(state['said'])}", {"text": state["said"], "n": 1})
    return {}


async def arecall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    found = await runtime.store.asearch((state["user"],), query="what is my dog called?", limit=2)
    return {"recalled": [item.value["text"] for item in found]}


def graph(store: MemlaneStore, *, asynchronous: bool = False) -> Any:
    builder = StateGraph(State)
    builder.add_node("remember", aremember if asynchronous else remember)
    builder.add_node("recall", arecall if asynchronous else recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


async def check_store(store: MemlaneStore, memory: Any, user: str) -> None:
    """The store's own interface, async (every adapter backend) after the graph ran the three turns."""
    (stored,) = [m for m in await acall(memory, "list", user_id=user) if m.text == "My dog is called Pepper"]
    assert stored.agent_id == "chat" and stored.metadata["langgraph_key"] == "turn-23"  # a memory of user, agent
    ns = (user, "chat")
    item = await store.aget(ns, "turn-23")
    assert item is not None and item.value == {"text": "My dog is called Pepper", "n": 1} and item.namespace == ns
    await store.aput(ns, "turn-23", {"text": "My dog is called Biscuit", "n": 2})  # same key: an update
    updated = await store.aget(ns, "turn-23")
    assert updated is not None and updated.value["n"] == 2
    found = await store.asearch((user,), query="dog name", limit=1)
    assert [i.value["text"] for i in found] == ["My dog is called Biscuit"]
    assert len(await store.asearch(ns, limit=10)) == 3
    assert [i.key for i in await store.asearch((user,), filter={"text": "I work as a nurse"})] == ["turn-17"]
    assert await store.alist_namespaces(prefix=(user,)) == [ns]
    await store.aput((user, "notes"), "k", {"topic": "garden"})  # no text field: the value as JSON is the text
    assert await store.alist_namespaces(prefix=(user,), max_depth=1) == [(user,)]
    assert len(await store.alist_namespaces(prefix=(user,))) == 2
    await store.adelete(ns, "turn-23")
    assert await store.aget(ns, "turn-23") is None
    assert (await store.abatch([GetOp(ns, "turn-17"), GetOp((f"{user}-bob", "chat"), "turn-17")]))[1] is None
    with pytest.raises(ValidationError, match="user_id"):
        await store.abatch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("chat",)),))])


@pytest.mark.parametrize("asynchronous_nodes", [True, False], ids=["async-nodes", "sync-nodes"])
def test_ainvoke_runs_a_graph_over_the_store(backend: Backend, user: str, asynchronous_nodes: bool) -> None:
    """``ainvoke``: async nodes await the store; sync nodes run on LangGraph's threads (over an ``AsyncClient`` their
    calls are carried to the graph's event loop)."""

    async def main() -> None:
        async with backend.open() as memory:
            store = MemlaneStore(memory)
            app = graph(store, asynchronous=asynchronous_nodes)
            for said in SAID:
                out = await app.ainvoke({"user": user, "said": said, "recalled": []})
            assert out["recalled"][0] == "My dog is called Pepper"
            await check_store(store, memory, user)

    anyio.run(main)


def test_invoke_runs_a_graph_over_the_store(backend: Backend, user: str) -> None:
    if backend.is_async:

        async def main() -> None:
            async with backend.open() as memory:
                store = MemlaneStore(memory)
                with pytest.raises(ConfigError, match="async interface"):  # it would block its own loop
                    store.get((user, "chat"), "turn-23")

        anyio.run(main)
        return
    with backend.open_sync() as memory:
        store = MemlaneStore(memory)
        app = graph(store)
        for said in SAID:
            out = app.invoke({"user": user, "said": said, "recalled": []})
        assert out["recalled"][0] == "My dog is called Pepper"
        ns = (user, "chat")
        store.put(ns, "turn-23", {"text": "My dog is called Biscuit", "n": 2})
        assert [i.value["text"] for i in store.search((user,), query="dog name", limit=1)] == [
            "My dog is called Biscuit"
        ]
        assert store.list_namespaces(prefix=(user,)) == [ns]
        store.delete(ns, "turn-23")
        assert store.get(ns, "turn-23") is None
        assert anyio.run(store.aget, ns, "turn-17") is not None


def test_a_sync_call_over_an_async_client_outside_a_loop_names_the_way_out(served: tuple[str, str]) -> None:
    from memlane.client import AsyncClient

    store = MemlaneStore(AsyncClient(served[0], api_key=served[1]))  # created outside any event loop
    with pytest.raises(ConfigError, match="async interface"):
        store.put(("maya", "chat"), "k", {"text": "hello"})


def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = readme.split("\n## LangGraph\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    assert 'Memory("memories.db")' in code
    code = code.replace('Memory("memories.db")', 'Memory(":memory:", embedder="hash")')
    exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.strip() == "['I adopted a border collie called Pepper']"
