"""OpenAIChat against a real HTTP server on 127.0.0.1 replaying recorded and scripted chat-completion replies."""

from __future__ import annotations

import pytest

from memlane.errors import ConfigError, LLMError
from memlane.llm import ChatMessage, ChatModel, OpenAIChat, Price, Usage, UsageCounter
from tests.llm.replay import Reply, completion, recorded, replay_server

HELLO = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="hi")]
SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


def test_is_a_chat_model_and_sends_nothing_until_called() -> None:
    with replay_server() as (url, script):
        chat = OpenAIChat(url, "m", api_key="secret")
        assert isinstance(chat, ChatModel)
        assert chat.identity == f"openai-compatible:m@{url.split('/')[2]}"
        assert script.requests == []
        chat.close()


def test_credentials_in_the_url_stay_out_of_the_identity() -> None:
    chat = OpenAIChat("http://user:pw@localhost:9/v1", "m")
    assert "pw" not in chat.identity and "pw" not in repr(chat)
    chat.close()


@pytest.mark.parametrize("url", ["localhost:8080", "ftp://host/v1", ""])
def test_bad_endpoint_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError):
        OpenAIChat(url, "m")


def test_plain_completion_reports_text_usage_and_latency() -> None:
    with replay_server(completion("hello", prompt_tokens=7, completion_tokens=2)) as (url, script):
        counter = UsageCounter({"m": Price(prompt_per_million=1_000_000, completion_per_million=2_000_000)})
        with OpenAIChat(url, "m", api_key="k", counter=counter) as chat:
            reply = chat.complete(HELLO, max_tokens=16, temperature=0.3)
    assert reply.text == "hello" and reply.parsed is None and reply.finish_reason == "stop"
    assert reply.usage == Usage(prompt_tokens=7, completion_tokens=2) and reply.latency > 0
    sent = script.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer k"
    assert sent["body"]["messages"] == [m.model_dump() for m in HELLO]
    assert sent["body"]["max_tokens"] == 16 and sent["body"]["temperature"] == 0.3
    assert "response_format" not in sent["body"]
    assert counter.calls == 1 and counter.usage.total_tokens == 9 and counter.cost == pytest.approx(11.0)


def test_schema_is_sent_as_json_schema_and_the_reply_parsed() -> None:
    with replay_server(completion('{"action": "ADD"}')) as (url, script), OpenAIChat(url, "m") as chat:
        reply = chat.complete(HELLO, schema=SCHEMA)
    assert reply.parsed == {"action": "ADD"}
    fmt = script.requests[0]["body"]["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA}}


def test_real_refusal_of_json_schema_falls_back_to_json_mode_and_remembers() -> None:
    # Both replies were recorded from llama-cpp-python's server with SmolLM2-135M: it answers HTTP 500 to json_schema.
    replies = [
        recorded("consolidate_json_schema"),
        recorded("consolidate_json_object"),
        recorded("consolidate_json_object"),
    ]
    with replay_server(*replies) as (url, script), OpenAIChat(url, "m", max_retries=3, backoff=0) as chat:
        first = chat.complete(HELLO, schema=SCHEMA)
        assert chat.structured_mode == "json_object"
        chat.complete(HELLO, schema=SCHEMA)
    formats = [r["body"]["response_format"]["type"] for r in script.requests]
    assert formats == ["json_schema", "json_object", "json_object"]  # no retries of the refusal, no second try
    assert isinstance(first.parsed, dict) and "action" in first.parsed  # the real (ill-shaped) reply
    assert first.usage.prompt_tokens == 223


def test_json_mode_refused_too_falls_back_to_no_format() -> None:
    refusal = Reply(status=400, body={"error": {"message": "response_format is not supported"}})
    with replay_server(refusal, refusal, completion("{}")) as (url, script), OpenAIChat(url, "m") as chat:
        chat.complete(HELLO, schema=SCHEMA)
    assert [("response_format" in r["body"]) for r in script.requests] == [True, True, False]
    assert chat.structured_mode == "none"


def test_429_and_5xx_are_retried_with_backoff() -> None:
    replies = [
        Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "0"}),
        Reply(status=503, body={"error": "busy"}),
        completion("ok"),
    ]
    with replay_server(*replies) as (url, script), OpenAIChat(url, "m", backoff=0.01) as chat:
        assert chat.complete(HELLO).text == "ok"
    assert len(script.requests) == 3


def test_retries_are_bounded_and_the_failure_is_an_llm_error_and_counted() -> None:
    counter = UsageCounter()
    with replay_server(Reply(status=502, body="bad gateway")) as (url, script):
        with OpenAIChat(url, "m", max_retries=2, backoff=0, counter=counter) as chat, pytest.raises(LLMError) as err:
            chat.complete(HELLO)
    assert len(script.requests) == 3
    assert "after 3 attempts" in str(err.value) and "502" in str(err.value)
    assert counter.calls == 1 and counter.failures == 1


def test_a_timeout_is_retried() -> None:
    with replay_server(Reply(delay=1.0, body="late"), completion("on time")) as (url, script):
        with OpenAIChat(url, "m", timeout=0.3, backoff=0) as chat:
            assert chat.complete(HELLO).text == "on time"
    assert len(script.requests) == 2


def test_other_client_errors_do_not_downgrade_structured_output() -> None:
    too_long = Reply(status=400, body={"error": {"message": "maximum context length is 4096 tokens"}})
    with replay_server(too_long) as (url, script), OpenAIChat(url, "m") as chat:
        with pytest.raises(LLMError, match="context length"):
            chat.complete(HELLO, schema=SCHEMA)
    assert len(script.requests) == 1 and chat.structured_mode == "json_schema"


def test_client_errors_are_not_retried() -> None:
    with replay_server(Reply(status=401, body={"error": "bad key"})) as (url, script), OpenAIChat(url, "m") as chat:
        with pytest.raises(LLMError, match="401"):
            chat.complete(HELLO, schema=None)
    assert len(script.requests) == 1


@pytest.mark.parametrize("body", ["not json", {"choices": []}, {"object": "chat.completion"}])
def test_an_unexpected_body_is_an_llm_error(body: object) -> None:
    with replay_server(Reply(body=body)) as (url, _), OpenAIChat(url, "m") as chat, pytest.raises(LLMError):
        chat.complete(HELLO)


def test_arguments_are_checked_before_sending() -> None:
    with replay_server() as (url, script), OpenAIChat(url, "m") as chat:
        with pytest.raises(ConfigError):
            chat.complete([])
        with pytest.raises(ConfigError):
            chat.complete(HELLO, max_tokens=0)
    assert script.requests == []


def test_usage_counter_keeps_bounded_records() -> None:
    counter = UsageCounter(keep=2)
    for i in range(3):
        counter.record("m", Usage(prompt_tokens=i, completion_tokens=1), 0.1)
    assert [r.usage.prompt_tokens for r in counter.records()] == [1, 2]
    assert counter.usage == Usage(prompt_tokens=3, completion_tokens=3) and counter.calls == 3
    assert counter.latency == pytest.approx(0.3)
    with pytest.raises(ConfigError):
        UsageCounter(keep=-1)
