"""The ``ChatModel`` seam: one method that sends chat messages to a language model and returns a typed reply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]


class ChatMessage(BaseModel):
    """One message of a chat request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str


class Usage(BaseModel):
    """Tokens one call (or a sum of calls) consumed, as reported by the provider."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ChatReply(BaseModel):
    """A model's reply: its text, the decoded JSON when structured output was asked for and valid, and its cost."""

    model_config = ConfigDict(extra="forbid")

    text: str
    parsed: Any | None = Field(default=None, description="the reply decoded as JSON when a schema was requested")
    usage: Usage = Field(default_factory=Usage)
    latency: float = Field(default=0.0, ge=0.0, description="wall-clock seconds of the call, retries included")
    model: str = ""
    finish_reason: str | None = Field(default=None, description="'stop', 'length' (truncated), ... when reported")


@runtime_checkable
class ChatModel(Protocol):
    """A chat-completion model. Implementations raise ``LLMError`` (never a driver error) on failure."""

    @property
    def identity(self) -> str:
        """Provider, model and host, without credentials, e.g. ``openai-compatible:qwen2.5@localhost:8080``."""
        ...

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> ChatReply:
        """Send ``messages``; with ``schema`` (a JSON Schema) ask for a JSON reply that follows it."""
        ...
