"""The LLM side of ``ask``: choosing a tool (search or a structured query, as JSON), validating a generated
structured query against the user's entities, and answering with claims that cite memory ids, checked.

Each prompt is paired with its output model (the JSON schema sent as structured output).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memlane.enrich.entities import canonical
from memlane.errors import ValidationError
from memlane.extraction.parsing import complete_structured
from memlane.extraction.prompts.base import Prompt
from memlane.llm.base import ChatMessage, ChatModel
from memlane.structured.query import Match, Op, StructuredQuery, Unit
from memlane.structured.rules import Vocabulary


class MatchSpec(BaseModel):
    """A ``Match`` as JSON."""

    model_config = ConfigDict(extra="forbid")

    subject: str | None = Field(default=None, description="the person who did or said it")
    entities: list[str] = Field(default_factory=list, description="other named entities it must involve")
    terms: list[list[str]] = Field(
        default_factory=list, description="groups of single words; each group: one of its words must appear"
    )
    roles: list[str] = Field(default_factory=list, description='"observation" to read only observations')
    since: datetime | None = None
    until: datetime | None = None


class QuerySpec(BaseModel):
    """A ``StructuredQuery`` as JSON."""

    model_config = ConfigDict(extra="forbid")

    op: Op
    match: MatchSpec
    versus: MatchSpec | None = Field(default=None, description="the second event, for op=order only")
    entity_kind: str | None = Field(default=None, description="for op=list: person, object, place, animal, ...")
    unit: Unit = Unit.OCCURRENCES
    limit: int = Field(default=20, ge=1, le=1000)


class RouteReply(BaseModel):
    """Which tool answers the question: semantic search, or a structured query over the memory tables."""

    model_config = ConfigDict(extra="forbid")

    tool: Literal["search", "structured"]
    query: QuerySpec | None = None


class Claim(BaseModel):
    """One statement of a generated answer and the memories it rests on."""

    model_config = ConfigDict(extra="forbid")

    text: str
    memory_ids: list[str] = Field(default_factory=list)


class AnswerReply(BaseModel):
    """A generated answer: the text, and each claim in it with the ids of the memories that support it."""

    model_config = ConfigDict(extra="forbid")

    answer: str
    claims: list[Claim] = Field(default_factory=list)


ROUTE = Prompt(
    name="route",
    version=1,
    system=(
        "You choose how to answer a question about a user's memories. Use tool 'structured' for questions that "
        "count (how many times), ask whether something ever happened, list things of a kind, ask for the first or "
        "last time, ask which of two things happened first, or ask what happened in a time range; fill 'query': "
        "op is one of count, exists, list, first, last, order, range; match.subject is the person who did it, "
        "match.entities other names, match.terms groups of single lower-case content words (each group lists "
        'alternative words, e.g. [["dishwasher"], ["load", "loaded"]]), since/until ISO 8601 times. '
        "Use only entity names from the list given. For anything else use tool 'search'. Reply with JSON only."
    ),
    output=RouteReply,
)

ANSWER = Prompt(
    name="answer",
    version=1,
    system=(
        "Answer the question from the memories given, briefly. Every claim you make must cite the ids of the "
        "memories that support it (the id attribute of each <memory>). If the memories do not answer it, say so "
        'with no claims. Reply with JSON only: {"answer": ..., "claims": [{"text": ..., "memory_ids": [...]}]}.'
    ),
    output=AnswerReply,
)


def _name(raw: str, vocab: Vocabulary) -> str:
    key = canonical(raw)
    known = vocab.aliases.get(key)
    if known is None:
        raise ValidationError(f"the query names {raw[:60]!r}, which is no entity of this user")
    return known.name


def _match(spec: MatchSpec, vocab: Vocabulary) -> Match:
    groups = tuple(tuple(w.strip().lower() for w in g if w.strip()) for g in spec.terms)
    return Match(
        subject=_name(spec.subject, vocab) if spec.subject else None,
        entities=tuple(_name(e, vocab) for e in spec.entities),
        terms=tuple(g for g in groups if g),
        roles=tuple(spec.roles),
        since=spec.since,
        until=spec.until,
    )


def to_query(spec: QuerySpec, vocab: Vocabulary) -> StructuredQuery:
    """The typed query a model proposed, validated: names must be the user's entities, words single words."""
    return StructuredQuery(
        op=spec.op,
        match=_match(spec.match, vocab),
        versus=_match(spec.versus, vocab) if spec.versus is not None else None,
        entity_kind=spec.entity_kind,
        unit=spec.unit,
        limit=spec.limit,
    )


def route(chat: ChatModel, question: str, vocab: Vocabulary, now: datetime) -> RouteReply:
    """Ask the model which tool answers ``question`` (``StructuredOutputError``/``LLMError`` on failure)."""
    names = sorted({e.name for e in vocab.aliases.values()})[:200]
    user = f"Now: {now.isoformat()}\nKnown entities: {', '.join(names) or '(none)'}\nQuestion: {question}"
    messages = [ChatMessage(role="system", content=ROUTE.system), ChatMessage(role="user", content=user)]
    return complete_structured(chat, messages, ROUTE, max_tokens=512).output


def generate(chat: ChatModel, question: str, context: str, structured: str | None) -> AnswerReply:
    """Ask the model to answer from the fenced ``context`` (and a structured result), citing memory ids."""
    extra = f"\nA structured query over the memories found: {structured}" if structured else ""
    user = f"{context}{extra}\n\nQuestion: {question}"
    messages = [ChatMessage(role="system", content=ANSWER.system), ChatMessage(role="user", content=user)]
    return complete_structured(chat, messages, ANSWER, max_tokens=1024).output


def unsupported_claims(claims: Sequence[Claim], evidence: set[str]) -> list[Claim]:
    """The claims that cite no memory, or cite one that was not among the evidence given to the model."""
    return [c for c in claims if not c.memory_ids or any(i not in evidence for i in c.memory_ids)]
