"""The consolidation prompt: a new memory and related existing ones in, one decision (``ConsolidationOutput``) out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlane.extraction.prompts.base import Prompt
from memlane.llm.base import ChatMessage


class ConsolidationOutput(BaseModel):
    """The decision for one new memory."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["ADD", "NOOP", "MERGE", "SUPERSEDE"]
    targets: list[str] = Field(default_factory=list, description="labels of the existing memories concerned")
    reason: str = ""

    @field_validator("action", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("targets", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value


SYSTEM = """You keep a person's long-term memories consistent. Given a NEW memory and EXISTING related memories,
choose one action:
ADD: the new memory is new information.
NOOP: an existing memory already says the same thing.
MERGE: the new memory restates or adds detail to one existing memory about the same thing (give its label).
SUPERSEDE: the new memory updates or contradicts existing memories, which stop being true (give their labels),
e.g. "Maya moved from Boston to Denver" supersedes "Maya lives in Boston".
Reply with one JSON object only: {"action": "...", "targets": ["e1"], "reason": "..."}."""

PROMPT = Prompt(name="consolidate", version=1, system=SYSTEM, output=ConsolidationOutput)


def render(new: tuple[str, str, str | None], existing: Sequence[tuple[str, str, str, str | None]]) -> list[ChatMessage]:
    """Chat messages for one decision: ``new`` is ``(kind, text, date)``; ``existing`` are ``(label, kind, text, date)``."""
    kind, text, date = new
    lines = [f"[{label}] ({k}{', ' + d if d else ''}) {t}" for label, k, t, d in existing]
    user = (
        f"NEW ({kind}{', ' + date if date else ''}): {text}\n\nEXISTING:\n"
        + ("\n".join(lines) if lines else "(none)")
        + "\n\nReply with the JSON object."
    )
    return [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)]
