"""A LangGraph store over memlane: ``MemlaneStore(memory)`` is a ``langgraph.store.base.BaseStore``.

``pip install 'memlane[langgraph]'``. A graph compiled with ``store=MemlaneStore(memory)`` reads and writes memlane
through ``runtime.store``. A namespace's first label is the memlane user, its second (when given) the agent; each
item is one memory stored losslessly (no extraction by default): its text is the value's ``text`` (or ``content``)
string, else the value as JSON, and the value itself rides in the memory's metadata. ``search`` with a query is
memlane's hybrid retrieval (``score`` is memlane's); without one it lists the namespace's items, oldest first.

``memory`` is a ``memlane.Memory``, a ``memlane.client.Client`` or an ``AsyncClient`` (the same method names):
switching from an embedded store to a server changes one line. LangGraph's async interface (``ainvoke``, ``abatch``,
``aput``, ...) awaits an ``AsyncClient`` natively and runs a ``Memory``'s or a ``Client``'s calls on a worker thread.
Over an ``AsyncClient`` a synchronous call (a sync node of a graph run by ``ainvoke``) is carried to the event loop
the store was created or last awaited in, as LangGraph's own async stores do; from that loop's own thread it is a
``ConfigError`` (it would block the loop). Bad input is refused by the library, with its ``MemlaneError``.
"""

from __future__ import annotations

import asyncio
import builtins
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from memlane.errors import ConfigError, MissingDependencyError, ValidationError
from memlane.integrations.calls import Steps, arun, is_async, request, run
from memlane.models import AddResult, Hit, MemoryItem

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("the LangGraph store (memlane.integrations.langgraph)", "langgraph") from exc

#: Metadata keys of a store item's memory.
MARK, NAMESPACE, KEY, VALUE = "langgraph_store", "langgraph_namespace", "langgraph_key", "langgraph_value"
MARKED = {MARK: "1"}
#: How many memories a listing, a key lookup or a namespace scan reads (the library's default page).
PAGE = 100


class MemoryLike(Protocol):
    """What the store calls: ``Memory``'s methods, which ``Client`` has too (``AsyncClient`` as coroutines)."""

    def add(self, messages: Any, *, user_id: str, **kwargs: Any) -> AddResult: ...
    def search(self, query: str, *, user_id: str, **kwargs: Any) -> list[Hit]: ...
    def list(self, *, user_id: str, **kwargs: Any) -> list[MemoryItem]: ...
    def update(self, memory_id: str, *, user_id: str, **kwargs: Any) -> MemoryItem: ...
    def delete(self, memory_id: str, *, user_id: str, **kwargs: Any) -> builtins.list[str]: ...


class AsyncMemoryLike(Protocol):
    """``MemoryLike`` as coroutines: an ``AsyncClient``."""

    async def add(self, messages: Any, *, user_id: str, **kwargs: Any) -> AddResult: ...
    async def search(self, query: str, *, user_id: str, **kwargs: Any) -> list[Hit]: ...
    async def list(self, *, user_id: str, **kwargs: Any) -> builtins.list[MemoryItem]: ...
    async def update(self, memory_id: str, *, user_id: str, **kwargs: Any) -> MemoryItem: ...
    async def delete(self, memory_id: str, *, user_id: str, **kwargs: Any) -> builtins.list[str]: ...


def _label(namespace: tuple[str, ...]) -> str:
    """A namespace as one string (LangGraph forbids periods in labels, so the join is unambiguous)."""
    return ".".join(namespace)


def _scope(namespace: tuple[str, ...]) -> tuple[str, str | None]:
    """The memlane user and agent a namespace names."""
    if not namespace:
        raise ValidationError("a namespace needs at least one label: its first label is the memlane user_id")
    return namespace[0], namespace[1] if len(namespace) > 1 else None


def _text(value: Mapping[str, Any]) -> str:
    for field in ("text", "content"):
        if isinstance(value.get(field), str) and value[field].strip():
            return str(value[field])
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return not wanted or all(value.get(k) == v for k, v in wanted.items())


def _item(memory: MemoryItem, cls: type[Item] = Item, score: float | None = None) -> Item:
    meta = memory.metadata
    fields: dict[str, Any] = {
        "namespace": tuple(str(meta[NAMESPACE]).split(".")),
        "key": str(meta[KEY]),
        "value": json.loads(str(meta[VALUE])),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }
    return SearchItem(**fields, score=score) if cls is SearchItem else Item(**fields)


class MemlaneStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memlane memories (see the module's docstring)."""

    supports_ttl = False

    def __init__(self, memory: MemoryLike | AsyncMemoryLike, *, infer: bool = False) -> None:
        """``infer``: also extract typed memories (facts, preferences, entities) from each stored text."""
        self.memory = memory
        self.infer = infer
        self._loop: asyncio.AbstractEventLoop | None = _running_loop()

    # -- one op each ---------------------------------------------------------------------------------------------

    def _find(self, namespace: tuple[str, ...], key: str) -> Steps[MemoryItem | None]:
        user, _ = _scope(namespace)
        meta = {**MARKED, NAMESPACE: _label(namespace), KEY: key}
        found = yield request("list", user_id=user, filters={"metadata": meta}, limit=1)
        return found[0] if found else None

    def _get(self, op: GetOp) -> Steps[Item | None]:
        found = yield from self._find(op.namespace, op.key)
        return None if found is None else _item(found)

    def _put(self, op: PutOp) -> Steps[None]:
        user, agent = _scope(op.namespace)
        old = yield from self._find(op.namespace, op.key)
        if op.value is None:
            if old is not None:
                yield request("delete", old.id, user_id=user)
            return
        meta = {**MARKED, NAMESPACE: _label(op.namespace), KEY: op.key, VALUE: json.dumps(op.value)}
        if old is not None:
            yield request("update", old.id, user_id=user, text=_text(op.value), metadata=meta)
            return
        yield request(
            "add",
            [{"role": "user", "content": _text(op.value)}],
            user_id=user,
            agent_id=agent,
            session_id=_label(op.namespace),
            timestamp=datetime.now().astimezone(),
            metadata=meta,
            infer=self.infer,
        )

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        user, agent = _scope(op.namespace_prefix)
        flt: dict[str, Any] = {"metadata": MARKED}
        if agent is not None:
            flt["agent_id"] = agent
        prefix = op.namespace_prefix
        ranked: list[tuple[MemoryItem, float | None]]
        if op.query:
            hits: list[Hit] = yield request("search", op.query, user_id=user, top_k=op.offset + op.limit, filters=flt)
            ranked = [(h.memory, h.score) for h in hits]
        else:
            listed: list[MemoryItem] = yield request("list", user_id=user, filters=flt, limit=PAGE)
            ranked = [(m, None) for m in listed]
        items = [_item(m, SearchItem, score) for m, score in ranked]
        kept = [i for i in items if i.namespace[: len(prefix)] == prefix and _matches(i.value, op.filter)]
        return [i for i in kept[op.offset : op.offset + op.limit] if isinstance(i, SearchItem)]

    def _namespaces(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        prefixes = [c.path for c in op.match_conditions or () if c.match_type == "prefix"]
        user = prefixes[0][0] if prefixes and prefixes[0] and prefixes[0][0] != "*" else None
        if user is None:
            raise ValidationError("list_namespaces needs a prefix whose first label is the memlane user_id")
        listed: list[MemoryItem] = yield request("list", user_id=user, filters={"metadata": MARKED}, limit=PAGE)
        found = {_item(m).namespace for m in listed}
        for cond in op.match_conditions or ():
            path = cond.path
            found = {
                ns
                for ns in found
                if len(ns) >= len(path)
                and all(
                    p in ("*", n)
                    for p, n in zip(
                        path, ns[: len(path)] if cond.match_type == "prefix" else ns[-len(path) :], strict=True
                    )
                )
            }
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    def _op(self, op: Op) -> Steps[Result]:
        if isinstance(op, GetOp):
            return (yield from self._get(op))
        if isinstance(op, PutOp):
            yield from self._put(op)
            return None
        if isinstance(op, SearchOp):
            return (yield from self._search(op))
        if isinstance(op, ListNamespacesOp):
            return (yield from self._namespaces(op))
        raise ValidationError(f"unknown store operation {type(op).__name__}")

    # -- BaseStore -----------------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (each one or a few memlane calls); a put is visible to the ops after it."""
        if is_async(self.memory):
            return self._on_loop(list(ops))
        return [run(self.memory, self._op(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` for async code: an ``AsyncClient`` awaited, a blocking memory's calls on a worker thread."""
        self._loop = asyncio.get_running_loop()
        return [await arun(self.memory, self._op(op)) for op in list(ops)]

    def _on_loop(self, ops: Sequence[Op]) -> list[Result]:
        """A synchronous batch over an ``AsyncClient``: run on the store's event loop, from another thread."""
        loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running() or _running_loop() is loop:
            raise ConfigError(
                "MemlaneStore over an AsyncClient: call it through LangGraph's async interface (ainvoke, astream, "
                "aget, asearch, aput, ...); a synchronous call (a sync node of a graph run by ainvoke) works only "
                "from another thread than the event loop's, on a store created in that loop or already awaited "
                "there. Or pass a Client or a Memory"
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
