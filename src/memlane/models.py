"""Typed records that cross every boundary: messages in, memories stored, hits out."""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

Metadata = dict[str, Any]


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC, at microsecond precision."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Make a datetime timezone-aware UTC; a naive value is taken to be UTC already.

    Raises ``ValueError`` when the UTC time falls off the calendar (before year 1 or after year 9999).
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is outside the calendar once converted to UTC") from None


def parse_time(value: datetime | str | int | float) -> datetime:
    """Parse an ISO 8601 string, a datetime or epoch seconds into an aware UTC datetime.

    Every failure, including a time off the calendar or a non-finite number, is a ``ValueError``.
    """
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"epoch seconds {value!r:.40} are outside the calendar") from None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO 8601 timestamp: {value[:80]!r}") from None
        return as_utc(parsed)
    raise ValueError(f"not a timestamp: {type(value).__name__}")


Timestamp = Annotated[datetime, Field(description="aware UTC datetime; ISO 8601 strings are accepted")]


class MemoryKind(enum.StrEnum):
    """What a memory is: a stored turn, a stored document or note, or a typed memory distilled from turns."""

    MESSAGE = "message"
    DOCUMENT = "document"  # a text that is not a conversation turn: no session, no neighbours (memlane.documents)
    PREFERENCE = "preference"
    FACT = "fact"
    PLAN = "plan"
    EVENT = "event"
    ENTITY = "entity"
    RELATION = "relation"
    ROUTINE = "routine"  # a recurring action derived from dated turns (memlane.lifecycle.routines)


class Message(BaseModel):
    """One conversation turn or observation, in the chat convention (role, content, name)."""

    model_config = ConfigDict(extra="forbid")

    role: str = "user"
    content: str
    name: str | None = Field(default=None, description="the speaker, when known")
    timestamp: datetime | None = None
    metadata: Metadata = Field(default_factory=dict)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _parse_timestamp(cls, value: Any) -> datetime | None:
        return None if value is None else parse_time(value)


class SourceRef(BaseModel):
    """A message a memory was distilled from, with that message's own metadata."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    role: str | None = None
    name: str | None = None
    timestamp: datetime | None = None
    metadata: Metadata = Field(default_factory=dict)


class MemoryItem(BaseModel):
    """A stored memory: a lossless turn (``kind=message``) or a typed memory with its sources."""

    model_config = ConfigDict(extra="forbid")

    id: str
    user_id: str
    agent_id: str | None = None
    session_id: str | None = None
    kind: MemoryKind = MemoryKind.MESSAGE
    role: str | None = None
    speaker: str | None = None
    text: str
    timestamp: datetime = Field(description="when the turn was said or the observation made")
    created_at: datetime
    updated_at: datetime
    event_time: datetime | None = Field(default=None, description="when the thing described happened (start)")
    event_end: datetime | None = Field(default=None, description="end of the event's time span (exclusive)")
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    access_count: int = Field(default=0, ge=0)
    last_accessed: datetime | None = None
    content_hash: str
    sources: list[SourceRef] = Field(default_factory=list)
    metadata: Metadata = Field(default_factory=dict)
    position: int | None = Field(default=None, description="0-based order of arrival within its session")
    category: str | None = Field(default=None, description="topic, e.g. work, family, health")
    intent: str | None = Field(default=None, description="e.g. fact, preference, plan, question")
    entities: list[str] = Field(default_factory=list, description="canonical names of the entities it mentions")
    valid_from: datetime | None = Field(
        default=None, description="when a typed memory started to hold (its event time, else when it was said)"
    )
    valid_until: datetime | None = Field(
        default=None, description="when it stopped holding (set when superseded); None while it still holds"
    )
    superseded_by: str | None = Field(default=None, description="id of the memory that replaced it")

    @property
    def is_current(self) -> bool:
        """Whether the memory still holds (it has not been superseded)."""
        return self.valid_until is None


#: The lossless record: what callers store (turns and observations, documents and notes), never derived.
RECORD_KINDS: tuple[MemoryKind, ...] = (MemoryKind.MESSAGE, MemoryKind.DOCUMENT)

#: The kinds an extractor produces (every kind but the lossless record's).
TYPED_KINDS: tuple[MemoryKind, ...] = tuple(k for k in MemoryKind if k not in RECORD_KINDS)


class Document(BaseModel):
    """A text to remember that is not a conversation turn: a note, a page, a support answer.

    Stored losslessly as one ``kind=document`` memory with no session and no neighbours; a long text is also
    embedded passage by passage, so that all of it can be found. ``title`` and ``source`` are kept in the memory's
    metadata (keys ``title`` and ``source``, so ``Filters(metadata={"source": ...})`` selects by them).
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    title: str | None = None
    source: str | None = Field(default=None, description="where the text comes from: a path, a URL, an id")
    timestamp: datetime | None = Field(default=None, description="when it was written; default: when it is added")
    metadata: Metadata = Field(default_factory=dict)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _parse_timestamp(cls, value: Any) -> datetime | None:
        return None if value is None else parse_time(value)


class Passage(BaseModel):
    """The part of a document that matched a query: its place among the document's passages and its span."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0, description="0-based number of the passage in its document")
    count: int = Field(ge=1, description="how many passages the document was split into")
    start: int = Field(ge=0, description="offset of the passage's first character in the memory's text")
    end: int = Field(ge=0, description="offset just past its last character")
    score: float = Field(description="the passage's cosine similarity to the query")


class ScoreBreakdown(BaseModel):
    """One dimension's part in a hit's score: raw signal, normalised value, weight, contribution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    raw: float
    normalized: float
    weight: float
    contribution: float
    rank: int | None = Field(default=None, description="1-based rank within this dimension's candidates")


class Hit(BaseModel):
    """A search result: the memory, its fused score and why it was chosen."""

    model_config = ConfigDict(extra="forbid")

    memory: MemoryItem
    score: float
    breakdown: dict[str, ScoreBreakdown] = Field(default_factory=dict)
    triggers: dict[str, str] = Field(
        default_factory=dict, description="for each dimension in the breakdown, what in the query engaged it"
    )
    query: str = Field(default="", description="the query this hit answers (used by feedback)")
    related: list[MemoryItem] = Field(
        default_factory=list,
        description=(
            "other forms of the same statement that matched too, ranked below this hit and folded into it: the "
            "message a typed memory was distilled from, or typed memories distilled from this message"
        ),
    )
    passage: Passage | None = Field(
        default=None,
        description="for a document split into passages: the passage whose vector gave the dense score",
    )
    flag: InjectionFlag | None = Field(
        default=None,
        description="set when the memory is flagged as a likely prompt injection (the adapters fill it in): never "
        "put its text in a prompt unfenced",
    )


class HistoryEvent(enum.StrEnum):
    """What happened to a memory."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    IMPORT = "IMPORT"
    REINDEX = "REINDEX"
    EXTRACT = "EXTRACT"
    MERGE = "MERGE"
    SUPERSEDE = "SUPERSEDE"
    EVICT = "EVICT"
    RESTORE = "RESTORE"


class HistoryEntry(BaseModel):
    """One recorded change of a memory; text snapshots are erased when the memory is deleted."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    event: HistoryEvent
    at: datetime
    old_text: str | None = None
    new_text: str | None = None
    changes: Metadata = Field(default_factory=dict)


class Filters(BaseModel):
    """Search and list filters; unknown keys are rejected by name."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | list[str] | None = None
    agent_id: str | list[str] | None = None
    kind: MemoryKind | list[MemoryKind] | None = None
    role: str | list[str] | None = None
    speaker: str | list[str] | None = None
    since: datetime | None = Field(default=None, description="timestamp >= since")
    until: datetime | None = Field(default=None, description="timestamp < until")
    metadata: Metadata = Field(default_factory=dict, description="exact matches on metadata keys")
    include_superseded: bool = Field(
        default=False, description="also return memories that have been superseded (valid_until is set)"
    )
    as_of: datetime | None = Field(
        default=None, description="only memories valid at this time (superseded ones included when they were valid)"
    )

    @field_validator("since", "until", "as_of", mode="before")
    @classmethod
    def _parse_bounds(cls, value: Any) -> datetime | None:
        return None if value is None else parse_time(value)


class AddResult(BaseModel):
    """What ``Memory.add`` stored.

    ``items`` are the messages in the order given; a message already stored (same content hash) is returned as
    it is stored and its id is listed in ``duplicates``. ``memories`` are the typed memories extracted and
    stored or merged into (synchronous extraction only); ``job_id`` names the extraction job when it runs in the
    background, or the failed job recorded for a retry when a synchronous LLM extraction failed.
    """

    model_config = ConfigDict(extra="forbid")

    items: list[MemoryItem]
    duplicates: list[str] = Field(default_factory=list)
    memories: list[MemoryItem] = Field(default_factory=list)
    job_id: str | None = None
    queue: str | None = Field(
        default=None, description="where a background job went: 'celery' (the broker), or 'embedded' (the job table)"
    )
    queue_notice: str | None = Field(default=None, description="why a job meant for the broker went elsewhere")

    @property
    def added(self) -> list[MemoryItem]:
        """The messages this call actually stored (not already present)."""
        skip = set(self.duplicates)
        return [it for it in self.items if it.id not in skip]


class JobState(enum.StrEnum):
    """Where a background job stands."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Job(BaseModel):
    """A durable unit of background work (an extraction of stored messages), kept in the store's job table."""

    model_config = ConfigDict(extra="forbid")

    id: str
    user_id: str
    kind: str
    payload: Metadata = Field(default_factory=dict)
    state: JobState = JobState.QUEUED
    attempts: int = Field(default=0, ge=0)
    error: str | None = None
    created_at: datetime
    updated_at: datetime
    not_before: datetime | None = Field(
        default=None,
        description="until then the queue scan leaves it alone (handed to a broker's worker, or a retry's backoff)",
    )


class JobResult(BaseModel):
    """A background job and the typed memories it wrote (those extracted from the messages it was given, found by
    their sources; superseded ones included), oldest first.
    """

    model_config = ConfigDict(extra="forbid")

    job: Job
    memories: list[MemoryItem] = Field(default_factory=list)


class ArchivedMemory(BaseModel):
    """A memory evicted to the archive: out of every index, kept whole, restorable with ``Memory.restore``."""

    model_config = ConfigDict(extra="forbid")

    memory: MemoryItem
    archived_at: datetime
    reason: str = ""


class Stats(BaseModel):
    """Counts and sizes of a store, optionally for one user."""

    model_config = ConfigDict(extra="forbid")

    memories: int
    users: int
    by_kind: dict[str, int]
    embedder: str | None
    dim: int | None
    path: str
    size_bytes: int


class UserSummary(BaseModel):
    """One user of a tenant and how many memories they hold (``Memory.users``)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str
    memories: int = Field(ge=0)


class Compaction(BaseModel):
    """What ``Memory.compact`` did: the store's size before and after, what it rewrote, and what it cannot reach."""

    model_config = ConfigDict(extra="forbid")

    path: str
    size_before: int
    size_after: int
    rewritten: list[str]
    notes: list[str] = Field(default_factory=list)


class InjectionFlag(BaseModel):
    """Why a memory was flagged as a likely prompt injection: its score, the detector's reasons, when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    score: float = Field(ge=0.0, le=1.0)
    reasons: list[str] = Field(default_factory=list)
    detector: str = ""
    flagged_at: datetime
    inherited_from: str | None = Field(
        default=None, description="for a typed memory: the flagged source message it was extracted from"
    )


class FlaggedMemory(BaseModel):
    """A flagged memory as an administrator reviews it: the memory (text kept whole) and its flag."""

    model_config = ConfigDict(extra="forbid")

    memory: MemoryItem
    flag: InjectionFlag
