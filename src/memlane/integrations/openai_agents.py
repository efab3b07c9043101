"""An OpenAI Agents SDK session over memlane: ``MemlaneSession(session_id, memory, user_id=...)``.

``pip install 'memlane[openai-agents]'``. Pass it as ``Runner.run(agent, input, session=...)``: the SDK reads the
conversation from it before each run and adds the run's new items after. Each item is one memlane memory of the
user, in memlane session ``session_id``, stored as is (no extraction by default): a message's text is its text
content and its role its role; any other item (a tool call, its output) has its type as role and its JSON as text.
The item itself rides in the memory's metadata, so ``get_items`` returns what was added; and the conversation is
searchable with the rest of the user's memory (``memory.search``, ``memory.context``).

``memory`` is a ``Memory``, a ``memlane.client.Client`` or an ``AsyncClient`` (the same method names): the
session's methods await an ``AsyncClient`` natively and run a ``Memory``'s or a ``Client``'s calls on a worker
thread, so the run's event loop never blocks.
"""

from __future__ import annotations

import builtins
import json
from typing import Any, Protocol

from memlane.errors import MissingDependencyError
from memlane.integrations.calls import Steps, acall, arun, request
from memlane.models import AddResult, MemoryItem

try:
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import SessionSettings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "the Agents SDK session (memlane.integrations.openai_agents)", "openai-agents"
    ) from exc

#: The metadata key holding an item's JSON.
ITEM = "openai_agents_item"
PAGE = 1000


class MemoryLike(Protocol):
    """What the session calls: ``Memory``'s methods, which ``Client`` has too."""

    def add(self, messages: Any, *, user_id: str, **kwargs: Any) -> AddResult: ...
    def list(self, *, user_id: str, **kwargs: Any) -> builtins.list[MemoryItem]: ...
    def delete(self, memory_id: str, *, user_id: str, **kwargs: Any) -> builtins.list[str]: ...


class AsyncMemoryLike(Protocol):
    """``MemoryLike`` as coroutines: an ``AsyncClient``."""

    async def add(self, messages: Any, *, user_id: str, **kwargs: Any) -> AddResult: ...
    async def list(self, *, user_id: str, **kwargs: Any) -> builtins.list[MemoryItem]: ...
    async def delete(self, memory_id: str, *, user_id: str, **kwargs: Any) -> builtins.list[str]: ...


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str) and content.strip():
        return content
    if isinstance(content, list):
        parts = [str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if "".join(parts).strip():
            return "\n".join(parts)
    return json.dumps(item, ensure_ascii=False, sort_keys=True)


class MemlaneSession(SessionABC):
    """An Agents SDK ``Session`` whose items are memlane memories (see the module's docstring)."""

    def __init__(
        self,
        session_id: str,
        memory: MemoryLike | AsyncMemoryLike,
        *,
        user_id: str,
        agent_id: str | None = None,
        infer: bool = False,
        session_settings: SessionSettings | None = None,
    ) -> None:
        """``infer``: also extract typed memories (facts, preferences, entities) from the stored messages."""
        self.session_id = session_id
        self.session_settings = session_settings
        self.memory = memory
        self.user_id = user_id
        self.agent_id = agent_id
        self.infer = infer

    def _stored(self) -> Steps[builtins.list[MemoryItem]]:
        """The session's memories that hold items, in the order they were added."""
        flt = {"session_id": self.session_id, "kind": "message"}
        found: builtins.list[MemoryItem] = []
        while True:
            page = yield request("list", user_id=self.user_id, filters=flt, limit=PAGE, offset=len(found))
            found.extend(page)
            if len(page) < PAGE:
                return [m for m in found if ITEM in m.metadata]

    async def get_items(self, limit: int | None = None) -> builtins.list[Any]:
        """The conversation, oldest first; with ``limit``, its latest ``limit`` items."""
        stored = await arun(self.memory, self._stored())
        if limit is not None:
            stored = stored[-limit:] if limit > 0 else []
        return [json.loads(str(m.metadata[ITEM])) for m in stored]

    async def add_items(self, items: builtins.list[Any]) -> None:
        """Store ``items`` in order, all or none."""
        if not items:
            return
        messages = []
        for raw in items:
            item = dict(raw)
            role = item.get("role") if item.get("type", "message") == "message" else item.get("type")
            meta = {ITEM: json.dumps(item, ensure_ascii=False)}
            messages.append({"role": str(role or "user"), "content": _text(item), "metadata": meta})
        await acall(
            self.memory,
            "add",
            messages,
            user_id=self.user_id,
            agent_id=self.agent_id,
            session_id=self.session_id,
            infer=self.infer,
        )

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (None when the session is empty)."""
        stored = await arun(self.memory, self._stored())
        if not stored:
            return None
        last = stored[-1]
        await acall(self.memory, "delete", last.id, user_id=self.user_id)
        return json.loads(str(last.metadata[ITEM]))

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        for m in await arun(self.memory, self._stored()):
            await acall(self.memory, "delete", m.id, user_id=self.user_id)
