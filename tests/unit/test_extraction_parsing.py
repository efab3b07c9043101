"""Tolerant parsing of model replies: fences, prose, repair, truncation, validation and the bounded re-ask."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from memlane.errors import LLMError, LLMOutputError
from memlane.extraction.parsing import StructuredOutputError, complete_structured, json_slice, parse_json, parse_reply
from memlane.extraction.prompts import consolidate, extract
from memlane.extraction.prompts.consolidate import ConsolidationOutput
from memlane.extraction.prompts.extract import ExtractionOutput
from memlane.llm import ChatMessage, ChatReply, Usage
from tests.llm.replay import FIXTURES


def real_reply(name: str) -> ChatReply:
    """A recorded real reply (see tests/fixtures/llm/README.md) as the client would return it."""
    body = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))["response"]
    choice = body["choices"][0]
    usage = Usage(prompt_tokens=body["usage"]["prompt_tokens"], completion_tokens=body["usage"]["completion_tokens"])
    return ChatReply(text=choice["message"]["content"], usage=usage, finish_reason=choice["finish_reason"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nAnything else?', '{"a": [1, 2]}'),
        ('<think>maybe {"x": 0}</think>{"a": "}"}', '{"a": "}"}'),
        ('[1, 2] and then {"a": 1}', "[1, 2]"),
        ('{"a": "unterminated', '{"a": "unterminated'),
        ("no json here", None),
    ],
)
def test_json_slice(text: str, expected: str | None) -> None:
    assert json_slice(text) == expected


def test_parse_json_repairs_what_strict_decoding_refuses() -> None:
    assert parse_json("{'a': 1, 'b': [1, 2,],}") == {"a": 1, "b": [1, 2]}
    assert parse_json('{"memories": [{"kind": "fact", "text": "x"}') == {"memories": [{"kind": "fact", "text": "x"}]}
    with pytest.raises(LLMOutputError):
        parse_json("I cannot help with that.")


def test_validation_is_lenient_about_case_scales_and_shapes() -> None:
    out = parse_reply(
        '{"memories": [{"kind": "Preference", "text": "Maya likes tea.", "confidence": 80, "importance": 7, '
        '"entities": "Maya", "sources": [{"label": "m1"}, 2], "event_time": null}]}',
        ExtractionOutput,
    )
    memory = out.memories[0]
    assert memory.kind == "preference" and memory.confidence == pytest.approx(0.8)
    assert memory.importance == pytest.approx(0.7)
    assert memory.entities == ["Maya"] and memory.sources == ["m1", "2"]
    assert (
        parse_reply('[{"kind": "fact", "text": "A bare list."}]', ExtractionOutput).memories[0].text == "A bare list."
    )


def test_validation_errors_name_the_field() -> None:
    with pytest.raises(LLMOutputError, match=r"memories\.0\.kind"):
        parse_reply('{"memories": [{"kind": "gossip", "text": "x"}]}', ExtractionOutput)


def test_real_looping_reply_cut_off_keeps_only_its_complete_items() -> None:
    reply = real_reply("extract_json_object")  # SmolLM2-135M repeating itself until max_tokens
    assert reply.finish_reason == "length"
    out = parse_reply(reply, ExtractionOutput)
    assert out.memories and all(m.text.endswith(".") for m in out.memories)


def test_real_reply_truncated_before_one_complete_item_is_refused() -> None:
    with pytest.raises(LLMOutputError, match="cut off"):
        parse_reply(real_reply("extract_truncated"), ExtractionOutput)


def test_real_garbled_reply_is_refused() -> None:
    with pytest.raises(LLMOutputError):
        parse_reply(real_reply("extract_garbled"), ExtractionOutput)


def test_real_ill_shaped_consolidation_is_refused() -> None:
    with pytest.raises(LLMOutputError, match="action"):
        parse_reply(real_reply("consolidate_json_object"), ConsolidationOutput)


class ScriptedChat:
    """A ChatModel double answering from a list, recording what it was asked."""

    identity = "scripted"

    def __init__(self, replies: Sequence[ChatReply | Exception]) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[ChatMessage], Mapping[str, Any] | None, int]] = []

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> ChatReply:
        self.calls.append((list(messages), schema, max_tokens))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_complete_structured_reasks_once_with_the_error_and_a_bigger_budget() -> None:
    good = ChatReply(text='{"action": "ADD"}', usage=Usage(prompt_tokens=3, completion_tokens=2))
    chat = ScriptedChat([real_reply("extract_truncated"), good])
    messages = consolidate.render(("fact", "Maya lives in Denver.", None), [])
    done = complete_structured(chat, messages, consolidate.PROMPT, max_tokens=24, reasks=1)
    assert done.output.action == "ADD"
    assert done.usage.prompt_tokens == 522 + 3
    second_messages, schema, budget = chat.calls[1]
    assert schema == consolidate.PROMPT.schema() and budget == 48
    assert second_messages[-2].role == "assistant" and "could not be used" in second_messages[-1].content


def test_complete_structured_gives_up_after_its_reasks_with_every_reply() -> None:
    chat = ScriptedChat([real_reply("extract_garbled"), real_reply("extract_garbled")])
    with pytest.raises(StructuredOutputError) as err:
        complete_structured(chat, extract.render([]), extract.PROMPT, reasks=1)
    assert len(err.value.replies) == 2 and err.value.usage.completion_tokens == 512
    assert len(chat.calls) == 2


def test_complete_structured_lets_call_failures_through() -> None:
    chat = ScriptedChat([LLMError("down")])
    with pytest.raises(LLMError, match="down"):
        complete_structured(chat, extract.render([]), extract.PROMPT)


def test_every_prompt_pairs_a_template_with_its_schema() -> None:
    for module in (extract, consolidate):
        schema = module.PROMPT.schema()
        assert schema["type"] == "object" and schema["properties"]
        assert (
            module.PROMPT.system
            in module.render(*(([],) if module is extract else (("fact", "x", None), [])))[0].content
        )
