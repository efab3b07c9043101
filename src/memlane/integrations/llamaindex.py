"""A LlamaIndex memory block over memlane: ``MemlaneMemoryBlock(memory=..., user_id=...)``.

``pip install 'memlane[llamaindex]'`` (``llama-index-core`` only). Give the block to LlamaIndex's ``Memory``
(``Memory.from_defaults(memory_blocks=[block], ...)``) and hand that memory to an agent or a chat engine. The messages
``Memory`` flushes from its short-term queue are added to memlane as the user's messages (their roles kept, the
LlamaIndex session as the memlane session; memlane extracts typed memories from them unless ``infer=False``), and on
each ``get`` the block returns memlane's context for the latest user message: the memories that bear on it, fenced as
quoted data with their dates and speakers, likely prompt injections left out, within ``token_budget`` tokens.
``Memory`` puts that text in the system message (or the latest user message) inside its ``<memory>`` template.

``memory`` is a ``memlane.Memory``, a ``memlane.client.Client`` or an ``AsyncClient``: the block's methods are
coroutines, which await an ``AsyncClient`` natively and run a ``Memory``'s or a ``Client``'s calls on a worker thread.

Offline: ``llama-index-core`` ships the tiktoken encoding its default token counter reads and the NLTK data it uses,
so nothing is downloaded at run time (unless ``TIKTOKEN_CACHE_DIR`` or ``NLTK_DATA`` point elsewhere); to count
tokens without tiktoken at all, pass ``Memory.from_defaults(tokenizer_fn=...)``.
"""

from __future__ import annotations

from typing import Any

from memlane.errors import ConfigError, MissingDependencyError
from memlane.integrations.calls import acall

try:
    from llama_index.core.base.llms.types import ChatMessage, TextBlock
    from llama_index.core.bridge.pydantic import Field, field_validator
    from llama_index.core.memory.memory import BaseMemoryBlock
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("the LlamaIndex memory block (memlane.integrations.llamaindex)", "llamaindex") from exc

#: The characters of the latest user message that form the query (its end, where a question usually is).
QUERY_CHARS = 2000


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text.strip())


class MemlaneMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex long-term memory block whose store and retrieval are memlane's (see the module's docstring)."""

    name: str = Field(default="memlane", description="The block's name (its tag in the memory template).")
    memory: Any = Field(exclude=True, description="A memlane Memory, Client or AsyncClient.")
    user_id: str = Field(description="The memlane user the conversation belongs to.")
    agent_id: str | None = Field(default=None, description="The memlane agent the messages are filed under.")
    token_budget: int = Field(default=1000, gt=0, description="The most (estimated) tokens the block adds.")
    roles: tuple[str, ...] = Field(
        default=("user", "assistant"), description="The roles of the flushed messages that are stored."
    )
    infer: bool | None = Field(
        default=None, description="Extract typed memories from stored messages (None: memlane's setting)."
    )

    @field_validator("memory")
    @classmethod
    def _memlane(cls, value: Any) -> Any:
        if not all(callable(getattr(value, method, None)) for method in ("add", "context")):
            raise ConfigError(f"memory must be a memlane Memory, Client or AsyncClient, not {type(value).__name__}")
        return value

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memlane context for the latest user message ('' when there is none, or nothing bears on it)."""
        query = next((t for m in reversed(messages or []) if m.role.value == "user" and (t := _text(m))), "")
        if not query:
            return ""
        found = await acall(
            self.memory, "context", query[-QUERY_CHARS:], user_id=self.user_id, token_budget=self.token_budget
        )
        return str(found.text)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Add the flushed messages (those of ``roles`` with text) to memlane, all or none."""
        kept = [(m, _text(m)) for m in messages if m.role.value in self.roles]
        turns = [{"role": m.role.value, "content": text} for m, text in kept if text]
        if not turns:
            return
        session = next(
            (str(m.additional_kwargs["session_id"]) for m, _ in kept if "session_id" in m.additional_kwargs), None
        )
        await acall(
            self.memory,
            "add",
            turns,
            user_id=self.user_id,
            agent_id=self.agent_id,
            session_id=session,
            infer=self.infer,
        )
