"""The ``Extractor`` seam: a window of messages in, typed candidate memories (with usage and errors) out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlane.enrich.classify import CATEGORIES
from memlane.llm.base import Usage
from memlane.models import TYPED_KINDS, MemoryItem, MemoryKind, parse_time

DEFAULT_MIN_CONFIDENCE = 0.6


class Candidate(BaseModel):
    """A typed memory proposed by an extractor, not yet deduplicated, consolidated or stored.

    ``text`` stands alone (pronouns resolved, dates absolute). ``subject``/``attribute``/``value`` are the
    structured claim consolidation compares ("Maya" / "residence" / "Denver"); any of them may be unknown.
    """

    model_config = ConfigDict(extra="forbid")

    kind: MemoryKind
    text: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    entities: list[str] = Field(default_factory=list)
    event_time: datetime | None = Field(default=None, description="when the thing described happens or happened")
    source_ids: list[str] = Field(default_factory=list, description="ids of the messages it was distilled from")
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None
    category: str | None = Field(
        default=None, description="topic when the extractor knows it from the claim; else enrichment labels the text"
    )

    @field_validator("kind")
    @classmethod
    def _typed_kind(cls, value: MemoryKind) -> MemoryKind:
        if value not in TYPED_KINDS:
            raise ValueError(f"a candidate is a typed memory, not a {value.value}")
        return value

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str | None) -> str | None:
        if value is not None and value not in CATEGORIES:
            raise ValueError(f"unknown category {value!r}; one of {', '.join(CATEGORIES)}")
        return value

    @field_validator("event_time", mode="before")
    @classmethod
    def _parse_event_time(cls, value: Any) -> datetime | None:
        return None if value is None else parse_time(value)


class ExtractionFailure(BaseModel):
    """A window (or batch of it) that could not be extracted; its messages are kept and can be retried later."""

    model_config = ConfigDict(extra="forbid")

    source_ids: list[str]
    reason: str
    raw_reply: str | None = Field(default=None, description="the model's last reply, when there was one")
    retryable: bool = True


class ExtractionResult(BaseModel):
    """What one ``extract`` call produced: candidates, the tokens it cost and the batches that failed."""

    model_config = ConfigDict(extra="forbid")

    candidates: list[Candidate] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    errors: list[ExtractionFailure] = Field(default_factory=list)

    def accepted(self, min_confidence: float = DEFAULT_MIN_CONFIDENCE) -> list[Candidate]:
        """The candidates worth storing: confidence at least ``min_confidence`` (0.6 by default)."""
        return [c for c in self.candidates if c.confidence >= min_confidence]


@runtime_checkable
class Extractor(Protocol):
    """Turns a window of messages, and the existing memories most related to them, into candidate memories.

    Implementations never raise for a bad model reply: they report it in ``ExtractionResult.errors`` with the
    ids of the messages concerned, so that nothing is lost and the window can be retried.
    """

    @property
    def identity(self) -> str:
        """What extracts, e.g. ``offline-rules-1`` or ``llm:openai-compatible:qwen2.5@localhost``."""
        ...

    def extract(self, window: Sequence[MemoryItem], related: Sequence[MemoryItem] = ()) -> ExtractionResult:
        """Candidates from ``window`` (messages, oldest first), knowing the ``related`` existing memories."""
        ...
