"""Tolerant parsing of model replies into their output models, with repair and a bounded re-ask."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

import json_repair
from pydantic import ValidationError as PydanticValidationError

from memlane.errors import LLMOutputError
from memlane.extraction.prompts.base import Output, Prompt
from memlane.llm.base import ChatMessage, ChatModel, ChatReply, Usage

log = logging.getLogger(__name__)

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
MAX_ECHO_CHARS = 4000


class StructuredOutputError(LLMOutputError):
    """No usable reply after the re-asks; ``replies`` holds every reply received, ``usage`` their tokens."""

    def __init__(self, message: str, replies: Sequence[ChatReply]) -> None:
        super().__init__(message)
        self.replies = list(replies)
        self.usage = sum((r.usage for r in replies), Usage())


def json_slice(text: str) -> str | None:
    """The first JSON object or array in ``text``, past reasoning blocks, code fences and prose.

    Returns the balanced ``{...}``/``[...]`` span, or everything from its opening bracket when it is never closed
    (a truncated reply, left for repair), or ``None`` when there is no bracket at all.
    """
    text = _THINK.sub("", text)
    fence = _FENCE.search(text)
    if fence and ("{" in fence.group(1) or "[" in fence.group(1)):
        text = fence.group(1)
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def parse_json(text: str) -> Any:
    """Decode the first JSON value in a model reply; repair it (``json-repair``) when strict decoding fails."""
    span = json_slice(text)
    if span is None:
        raise LLMOutputError(f"no JSON object in the reply: {text[:200]!r}")
    try:
        return json.loads(span)
    except ValueError:
        pass
    repaired = json_repair.loads(span)
    if not isinstance(repaired, dict | list) or (repaired in ({}, []) and len(span.strip()) > 2):
        raise LLMOutputError(f"the reply's JSON could not be repaired: {span[:200]!r}")
    log.debug("repaired malformed JSON reply of %d chars", len(span))
    return repaired


def _list_field(model: type[Output]) -> str | None:
    """The name of the model's only list field, if it has exactly one."""
    names = [name for name, f in model.model_fields.items() if getattr(f.annotation, "__origin__", None) is list]
    return names[0] if len(names) == 1 else None


def validate(data: Any, model: type[Output]) -> Output:
    """Validate decoded JSON against ``model``; a bare list is wrapped when the model has exactly one list field."""
    field_name = _list_field(model)
    if isinstance(data, list) and field_name is not None:
        data = {field_name: data}
    try:
        return model.model_validate(data)
    except PydanticValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LLMOutputError(f"the reply does not match {model.__name__}: {where}: {first['msg']}") from None


def _complete_items(data: Any, model: type[Output]) -> Any:
    """A truncated reply's decoded JSON without its last list item, which the cut may have damaged."""
    field_name = _list_field(model)
    if field_name is None:
        raise LLMOutputError("the reply was cut off by the token limit")
    items = data if isinstance(data, list) else data.get(field_name) if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) < 2:
        raise LLMOutputError("the reply was cut off by the token limit before one complete item")
    return {field_name: items[:-1]}


def parse_reply(reply: ChatReply | str, model: type[Output], *, truncated: bool | None = None) -> Output:
    """A reply as ``model``: its provider-parsed JSON when present and valid, else its text parsed tolerantly.

    A reply cut off by the token limit (``truncated``, by default its ``finish_reason == "length"``) is repaired
    and keeps only the items before the last one of its list, or is refused when it has no list.
    """
    if isinstance(reply, ChatReply):
        truncated = reply.finish_reason == "length" if truncated is None else truncated
        if reply.parsed is not None and not truncated:
            try:
                return validate(reply.parsed, model)
            except LLMOutputError:
                pass
        text = reply.text
    else:
        text = reply
    data = parse_json(text)
    if truncated:
        data = _complete_items(data, model)
    return validate(data, model)


@dataclass
class Structured(Generic[Output]):
    """A validated output and every reply it took to get it."""

    output: Output
    replies: list[ChatReply] = field(default_factory=list)

    @property
    def usage(self) -> Usage:
        """Tokens over all the replies."""
        return sum((r.usage for r in self.replies), Usage())


def complete_structured(
    chat: ChatModel,
    messages: Sequence[ChatMessage],
    prompt: Prompt[Output],
    *,
    max_tokens: int = 1024,
    temperature: float = 0.0,
    reasks: int = 1,
) -> Structured[Output]:
    """Ask ``chat`` for ``prompt``'s output, parse it tolerantly, and re-ask up to ``reasks`` times on failure.

    A re-ask shows the model its reply and the error; a reply cut off by ``max_tokens`` keeps its complete items
    (see ``parse_reply``) or is re-asked with twice the budget. Raises ``StructuredOutputError`` (carrying the replies) when no reply is usable, and ``LLMError`` when
    the call itself fails.
    """
    schema = prompt.schema()
    conversation = list(messages)
    replies: list[ChatReply] = []
    budget = max_tokens
    problem = ""
    for attempt in range(reasks + 1):
        reply = chat.complete(conversation, schema=schema, max_tokens=budget, temperature=temperature)
        replies.append(reply)
        try:
            return Structured(output=parse_reply(reply, prompt.output), replies=replies)
        except LLMOutputError as e:
            problem = str(e)
            truncated = reply.finish_reason == "length"
            log.info(
                "%s reply %d unusable (%s%s)", prompt.name, attempt + 1, problem, ", truncated" if truncated else ""
            )
        if truncated:
            budget *= 2
        conversation = [
            *messages,
            ChatMessage(role="assistant", content=reply.text[:MAX_ECHO_CHARS]),
            ChatMessage(
                role="user",
                content=f"That reply could not be used ({problem}). Reply again with only the JSON object, "
                "complete and valid, following the requested shape.",
            ),
        ]
    raise StructuredOutputError(f"{prompt.name}: no usable reply after {reasks + 1} attempts: {problem}", replies)
