"""LLMExtractor driven through OpenAIChat and a real HTTP server replaying recorded (real) and scripted replies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memlane.errors import ConfigError
from memlane.extraction import Extractor, LLMExtractor
from memlane.llm import OpenAIChat, UsageCounter
from memlane.models import MemoryItem, MemoryKind
from tests.llm.replay import Reply, completion, recorded, replay_server

T0 = datetime(2025, 5, 8, 18, 0, tzinfo=UTC)


def turn(i: int, text: str, speaker: str = "Caroline") -> MemoryItem:
    ts = T0 + timedelta(minutes=i)
    return MemoryItem(
        id=f"msg{i}",
        user_id="u",
        role="user",
        speaker=speaker,
        text=text,
        timestamp=ts,
        created_at=ts,
        updated_at=ts,
        content_hash=f"h{i}",
    )


WINDOW = [
    turn(0, "I'm training to become a counsellor."),
    turn(1, "I moved from Boston to Denver last year."),
    turn(2, "I prefer window seats on long flights."),
]

CLEAN = {  # hand-written in the wire format (not a model's reply): what a capable model returns
    "memories": [
        {
            "kind": "fact",
            "text": "Caroline is training to become a counsellor.",
            "confidence": 0.95,
            "importance": 0.7,
            "entities": ["Caroline"],
            "sources": ["m1"],
            "subject": "Caroline",
            "attribute": "occupation goal",
            "value": "counsellor",
        },
        {
            "kind": "fact",
            "text": "Caroline moved from Boston to Denver in 2024.",
            "confidence": 0.9,
            "entities": ["Caroline", "Boston", "Denver"],
            "event_time": "2024-01-01",
            "sources": ["m2"],
            "subject": "Caroline",
            "attribute": "residence",
            "value": "Denver",
        },
        {"kind": "preference", "text": "Caroline prefers window seats.", "confidence": 0.4, "sources": ["m3", "m9"]},
    ]
}


def test_clean_reply_becomes_typed_candidates_with_message_ids() -> None:
    with replay_server(completion(json.dumps(CLEAN), prompt_tokens=500, completion_tokens=120)) as (url, script):
        with OpenAIChat(url, "m") as chat:
            extractor = LLMExtractor(chat)
            assert isinstance(extractor, Extractor)
            result = extractor.extract(WINDOW, related=[turn(9, "Caroline lives in Boston.")])
    assert not result.errors
    first, moved, seats = result.candidates
    assert first.kind is MemoryKind.FACT and first.source_ids == ["msg0"] and first.attribute == "occupation goal"
    assert moved.event_time == datetime(2024, 1, 1, tzinfo=UTC) and moved.value == "Denver"
    assert seats.source_ids == ["msg2"]  # the unknown label m9 is dropped
    assert [c.text for c in result.accepted()] == [first.text, moved.text]  # 0.4 is below the 0.6 threshold
    assert result.usage.prompt_tokens == 500 and result.usage.completion_tokens == 120
    prompt = script.requests[0]["body"]["messages"][1]["content"]
    assert "[m1] 2025-05-08 Caroline: I'm training" in prompt and "[r1] (message) Caroline lives in Boston." in prompt
    assert script.requests[0]["body"]["response_format"]["type"] == "json_schema"


def test_real_small_model_replies_are_parsed_despite_refusal_repetition_and_truncation() -> None:
    # Recorded from SmolLM2-135M under llama-cpp-python: json_schema refused (HTTP 500), then a JSON-mode reply that
    # repeats itself until the token limit. The complete items are kept, repeats collapsed, source ids recovered.
    counter = UsageCounter()
    with replay_server(recorded("extract_json_schema"), recorded("extract_json_object")) as (url, script):
        with OpenAIChat(url, "smollm2-135m", counter=counter) as chat:
            result = LLMExtractor(chat, max_tokens=512).extract(WINDOW)
    assert not result.errors and result.candidates
    texts = [c.text for c in result.candidates]
    assert len(texts) == len(set(texts))
    assert all(c.source_ids == ["msg0", "msg1", "msg2"] for c in result.candidates)  # its labels were unusable
    # It wrote "I'm training to become a counsellor."; the one speaker of its sources is put back in.
    assert "Caroline is training to become a counsellor." in texts
    assert all(" I " not in f" {t} " and "M1" not in c.entities for t, c in zip(texts, result.candidates, strict=True))
    assert result.usage.prompt_tokens == 522 and counter.calls == 1
    assert [r["body"].get("response_format", {}).get("type") for r in script.requests] == ["json_schema", "json_object"]


def test_malformed_replies_never_lose_the_messages_they_are_recorded_for_retry() -> None:
    replies = [recorded("extract_json_schema"), recorded("extract_garbled"), recorded("extract_truncated")]
    with replay_server(*replies) as (url, script), OpenAIChat(url, "smollm2-135m") as chat:
        result = LLMExtractor(chat, reasks=1).extract(WINDOW)
    assert result.candidates == []
    (failure,) = result.errors
    assert failure.source_ids == ["msg0", "msg1", "msg2"] and failure.retryable
    assert failure.raw_reply is not None and failure.raw_reply.startswith(
        '{\n  "memories": [\n    {\n      "kind": "plan"'
    )
    assert "no usable reply after 2 attempts" in failure.reason
    assert result.usage.completion_tokens == 256 + 24  # the failed replies still cost tokens
    assert len(script.requests) == 3


def test_a_failing_endpoint_is_recorded_not_raised() -> None:
    with (
        replay_server(Reply(status=503, body="down")) as (url, _),
        OpenAIChat(url, "m", max_retries=1, backoff=0) as chat,
    ):
        result = LLMExtractor(chat).extract(WINDOW)
    assert result.candidates == [] and result.errors[0].source_ids == ["msg0", "msg1", "msg2"]
    assert result.errors[0].raw_reply is None and "503" in result.errors[0].reason


def test_batches_run_concurrently_under_the_limit() -> None:
    window = [turn(i, f"I like colour number {i}.") for i in range(10)]
    reply = completion('{"memories": [{"kind": "preference", "text": "Caroline likes colours.", "sources": ["m1"]}]}')
    reply.delay = 0.15
    with replay_server(reply) as (url, script), OpenAIChat(url, "m") as chat:
        results = LLMExtractor(chat, batch_size=2, max_workers=2).extract_many([(window[:6], []), (window[6:], [])])
    assert len(script.requests) == 5 and script.max_in_flight == 2
    assert [c.source_ids for c in results[0].candidates] == [["msg0"], ["msg2"], ["msg4"]]
    assert [c.source_ids for c in results[1].candidates] == [["msg6"], ["msg8"]]


def test_empty_window_sends_nothing() -> None:
    with replay_server() as (url, script), OpenAIChat(url, "m") as chat:
        assert LLMExtractor(chat).extract([]).candidates == []
    assert script.requests == []


def test_bad_settings_are_config_errors() -> None:
    with replay_server() as (url, _), OpenAIChat(url, "m") as chat, pytest.raises(ConfigError):
        LLMExtractor(chat, batch_size=0)
