"""BedrockChat over a real boto3 ``bedrock-runtime`` client whose Converse calls are stubbed by botocore's Stubber."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from memlane.errors import LLMError, MissingDependencyError
from memlane.llm import BedrockChat, ChatMessage, ChatModel, UsageCounter

boto3 = pytest.importorskip("boto3")
stub = pytest.importorskip("botocore.stub")

MESSAGES = [ChatMessage(role="system", content="Extract."), ChatMessage(role="user", content="I live in Denver.")]
SCHEMA = {"type": "object", "properties": {"memories": {"type": "array"}}, "required": ["memories"]}


@pytest.fixture
def client() -> Any:
    # Explicit fake credentials: nothing is read from the environment and nothing leaves the process.
    return boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")


def converse_reply(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17},
        "metrics": {"latencyMs": 40},
    }


def test_claude_gets_the_schema_as_a_forced_tool(client: Any) -> None:
    model = "anthropic.claude-3-haiku-20240307-v1:0"
    expected = {
        "modelId": model,
        "messages": [{"role": "user", "content": [{"text": "I live in Denver."}]}],
        "system": [{"text": "Extract."}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.0},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "record_output",
                        "description": "Record the answer as structured data.",
                        "inputSchema": {"json": SCHEMA},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": "record_output"}},
        },
    }
    tool_input = {"memories": [{"kind": "fact", "text": "The user lives in Denver."}]}
    counter = UsageCounter()
    with stub.Stubber(client) as stubber:
        stubber.add_response(
            "converse",
            converse_reply(
                [{"toolUse": {"toolUseId": "t1", "name": "record_output", "input": tool_input}}], "tool_use"
            ),
            expected,
        )
        chat = BedrockChat(model, client=client, counter=counter)
        assert isinstance(chat, ChatModel) and chat.tool_use
        reply = chat.complete(MESSAGES, schema=SCHEMA, max_tokens=64)
    assert reply.parsed == tool_input and reply.finish_reason == "stop"
    assert reply.usage.prompt_tokens == 12 and reply.usage.completion_tokens == 5
    assert counter.calls == 1 and chat.identity == f"bedrock:{model}@us-east-1"


def test_llama_gets_the_schema_through_the_prompt_and_returns_text(client: Any) -> None:
    model = "meta.llama3-8b-instruct-v1:0"
    with stub.Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply([{"text": '{"memories": []}'}], "max_tokens"))
        chat = BedrockChat(model, client=client)
        assert not chat.tool_use
        reply = chat.complete(MESSAGES, schema=SCHEMA)
    assert reply.text == '{"memories": []}' and reply.parsed is None and reply.finish_reason == "length"


def test_titan_takes_no_system_prompt_so_it_is_folded_into_the_first_turn(client: Any) -> None:
    model = "amazon.titan-text-express-v1"
    expected = {
        "modelId": model,
        "messages": [{"role": "user", "content": [{"text": "Extract."}, {"text": "I live in Denver."}]}],
        "inferenceConfig": {"maxTokens": 1024, "temperature": 0.0},
    }
    with stub.Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply([{"text": "ok"}]), expected)
        assert BedrockChat(model, client=client).complete(MESSAGES).text == "ok"


def test_provider_errors_become_llm_errors_and_are_counted(client: Any) -> None:
    counter = UsageCounter()
    with stub.Stubber(client) as stubber:
        stubber.add_client_error("converse", service_error_code="ThrottlingException", http_status_code=429)
        chat = BedrockChat("meta.llama3-8b-instruct-v1:0", client=client, counter=counter)
        with pytest.raises(LLMError, match="ThrottlingException"):
            chat.complete(MESSAGES)
    assert counter.failures == 1


def test_consecutive_turns_of_one_role_are_merged_for_converse(client: Any) -> None:
    messages = [
        ChatMessage(role="assistant", content="Hello."),
        ChatMessage(role="user", content="a"),
        ChatMessage(role="user", content="b"),
    ]
    expected = {
        "modelId": "meta.llama3-8b-instruct-v1:0",
        "messages": [
            {"role": "user", "content": [{"text": "Begin."}]},
            {"role": "assistant", "content": [{"text": "Hello."}]},
            {"role": "user", "content": [{"text": "a"}, {"text": "b"}]},
        ],
        "inferenceConfig": {"maxTokens": 1024, "temperature": 0.0},
    }
    with stub.Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply([{"text": "ok"}]), expected)
        BedrockChat("meta.llama3-8b-instruct-v1:0", client=client).complete(messages)


def test_without_boto3_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'memlane\[bedrock\]'"):
        BedrockChat("anthropic.claude-3-haiku-20240307-v1:0")


def test_default_client_is_built_without_a_network_call() -> None:
    chat = BedrockChat("us.anthropic.claude-3-5-haiku-20241022-v1:0", region="eu-west-1", max_retries=1, timeout=5)
    assert chat.tool_use and chat.identity.endswith("@eu-west-1")
