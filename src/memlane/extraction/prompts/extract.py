"""The memory-extraction prompt: conversation turns in, standalone typed memories (``ExtractionOutput``) out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlane.extraction.prompts.base import Prompt
from memlane.llm.base import ChatMessage

Kind = Literal["preference", "fact", "plan", "event", "entity", "relation"]


class ExtractedMemory(BaseModel):
    """One memory as the model writes it; lenient about case and 0-100 scales, strict about shape."""

    model_config = ConfigDict(extra="ignore")

    kind: Kind
    text: str = Field(min_length=1, description="standalone: names instead of pronouns, absolute dates")
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    entities: list[str] = Field(default_factory=list)
    event_time: str | None = Field(default=None, description="ISO date (YYYY-MM-DD) of what is described, if known")
    sources: list[str] = Field(default_factory=list, description="labels of the turns it comes from, e.g. m1")
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _lower_kind(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("confidence", "importance", mode="before")
    @classmethod
    def _unit_scale(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool) and 1.0 < value <= 100.0:
            return value / 10.0 if value <= 10.0 else value / 100.0  # a 0-10 or 0-100 scale
        return value

    @field_validator("entities", "sources", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        """Small models write ``"m1"``, ``["m1"]``, ``[{"label": "m1"}]`` or ``[1]``: keep the strings in them."""
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        out = []
        for item in items:
            if isinstance(item, dict):
                item = next((v for v in item.values() if isinstance(v, str | int) and not isinstance(v, bool)), None)
            if isinstance(item, str | int) and not isinstance(item, bool) and str(item).strip():
                out.append(str(item).strip())
        return out

    @field_validator("subject", "attribute", "value", "event_time", mode="before")
    @classmethod
    def _optional_text(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class ExtractionOutput(BaseModel):
    """The whole reply: a list of memories (possibly empty)."""

    model_config = ConfigDict(extra="ignore")

    memories: list[ExtractedMemory] = Field(default_factory=list)


SYSTEM = """You extract long-term memories about the people in a conversation.
Write each memory as one short sentence that stands alone: use names instead of pronouns ("Maya", not "I" or
"she") and absolute dates (2025-06-14, not "next Saturday"; the date of each turn is given).
Kinds: preference (likes, dislikes, favourites), fact (stable facts: job, home, family, health), plan (intentions
and future events), event (things that happened), entity (a named pet, place, object), relation (how two people
are related).
Only extract what a speaker states about themselves or clearly as true. Skip questions, hypotheticals, jokes,
sarcasm, small talk and anything already in the known memories unless it changed.
For each memory give: kind, text, confidence (0-1, how sure you are it is true and durable), importance (0-1),
entities (names), event_time (YYYY-MM-DD or null), sources (the labels of the turns, e.g. ["m1"]), and when it
states an attribute of someone: subject, attribute, value (e.g. "Maya", "residence", "Denver").
Reply with one JSON object only: {"memories": [...]}. Reply {"memories": []} if there is nothing to remember."""

PROMPT = Prompt(name="extract", version=1, system=SYSTEM, output=ExtractionOutput)


def render(
    turns: Sequence[tuple[str, str | None, str | None, datetime, str]],
    known: Sequence[tuple[str, str, str]] = (),
) -> list[ChatMessage]:
    """The chat messages for one batch.

    ``turns`` are ``(label, speaker, role, timestamp, text)``; ``known`` are ``(label, kind, text)`` of existing
    related memories.
    """
    lines = [
        f"[{label}] {ts.date().isoformat()} {speaker or role or 'user'}: {text}"
        for label, speaker, role, ts, text in turns
    ]
    known_lines = [f"[{label}] ({kind}) {text}" for label, kind, text in known]
    example = {
        "memories": [
            {
                "kind": "plan",
                "text": "Maya plans to visit Tokyo in June 2025.",
                "confidence": 0.9,
                "importance": 0.6,
                "entities": ["Maya", "Tokyo"],
                "event_time": "2025-06-01",
                "sources": ["m1"],
                "subject": "Maya",
                "attribute": "travel plan",
                "value": "Tokyo",
            }
        ]
    }
    user = (
        "Known memories:\n"
        + ("\n".join(known_lines) if known_lines else "(none)")
        + "\n\nConversation:\n"
        + "\n".join(lines)
        + "\n\nExample reply shape: "
        + json.dumps(example, ensure_ascii=False)
        + "\nNow reply with the JSON object for this conversation."
    )
    return [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)]
