"""``BedrockChat``: AWS Bedrock models (Claude, Llama, Titan, ...) through the boto3 Converse API."""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memlane.errors import ConfigError, LLMError, MissingDependencyError
from memlane.llm.base import ChatMessage, ChatReply, Usage
from memlane.llm.usage import UsageCounter

log = logging.getLogger(__name__)

TOOL_NAME = "record_output"


def _boto() -> tuple[Any, Any, Any]:
    """boto3, botocore.config and botocore.exceptions, or ``MissingDependencyError`` naming the extra."""
    try:
        return (
            importlib.import_module("boto3"),
            importlib.import_module("botocore.config"),
            importlib.import_module("botocore.exceptions"),
        )
    except ImportError as e:
        raise MissingDependencyError("AWS Bedrock chat model", "bedrock") from e


class BedrockChat:
    """Chat through ``bedrock-runtime`` ``converse``; credentials come from boto3's usual chain, or pass ``client``.

    With a ``schema`` and ``tool_use`` (the default for Anthropic models), the schema is sent as the input schema
    of one forced tool and the tool's input is the parsed reply: Bedrock's form of structured output. Other models
    (Llama, Titan) get the schema through the prompt only and their text is parsed by the caller. Titan text models
    take no system prompt, so it is folded into the first user turn. Throttling, timeouts and 5xx are retried by
    botocore's ``standard`` retry mode (``max_retries``); the last failure raises ``LLMError``. Creating the client
    sends nothing; ``complete`` does.
    """

    def __init__(
        self,
        model_id: str,
        *,
        region: str | None = None,
        client: Any | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        tool_use: bool | None = None,
        counter: UsageCounter | None = None,
    ) -> None:
        boto3, botocore_config, botocore_exceptions = _boto()
        if not model_id.strip():
            raise ConfigError("a Bedrock chat model needs a model id")
        if timeout <= 0 or max_retries < 0:
            raise ConfigError("timeout must be positive and max_retries not negative")
        self.model_id = model_id.strip()
        family = self.model_id.split(":")[0].rsplit(".", 2)
        self._vendor = family[-2] if len(family) >= 2 else family[0]  # "us.anthropic.claude-..." -> "anthropic"
        self.tool_use = self._vendor == "anthropic" if tool_use is None else tool_use
        self.counter = counter
        self._errors = (botocore_exceptions.ClientError, botocore_exceptions.BotoCoreError)
        if client is None:
            config = botocore_config.Config(
                retries={"max_attempts": max_retries + 1, "mode": "standard"},
                read_timeout=timeout,
                connect_timeout=min(timeout, 10.0),
            )
            client = boto3.client("bedrock-runtime", region_name=region, config=config)
        self._client = client

    def __repr__(self) -> str:
        return f"BedrockChat(model_id={self.model_id!r}, tool_use={self.tool_use})"

    @property
    def identity(self) -> str:
        region = getattr(getattr(self._client, "meta", None), "region_name", None) or "default"
        return f"bedrock:{self.model_id}@{region}"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> ChatReply:
        """Send ``messages`` through ``converse``; see the class docstring for structured output."""
        if not messages:
            raise ConfigError("complete() needs at least one message")
        if max_tokens <= 0:
            raise ConfigError(f"max_tokens must be positive, got {max_tokens}")
        request = self._request(messages, schema, max_tokens, temperature)
        start = time.perf_counter()
        try:
            response = self._client.converse(**request)
        except self._errors as e:
            if self.counter is not None:
                self.counter.record(self.model_id, Usage(), time.perf_counter() - start, ok=False)
            raise LLMError(f"Bedrock converse with {self.model_id} failed: {type(e).__name__}: {e}") from e
        latency = time.perf_counter() - start
        reply = self._reply(response, latency)
        if self.counter is not None:
            self.counter.record(self.model_id, reply.usage, reply.latency)
        return reply

    def _request(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None, max_tokens: int, temperature: float
    ) -> dict[str, Any]:
        system = [m.content for m in messages if m.role == "system"]
        turns: list[dict[str, Any]] = []
        for m in messages:
            if m.role == "system":
                continue
            if turns and turns[-1]["role"] == m.role:  # Converse wants alternating turns
                turns[-1]["content"].append({"text": m.content})
            else:
                turns.append({"role": m.role, "content": [{"text": m.content}]})
        if not turns or turns[0]["role"] != "user":
            turns.insert(0, {"role": "user", "content": [{"text": "Begin."}]})
        request: dict[str, Any] = {
            "modelId": self.model_id,
            "messages": turns,
            "inferenceConfig": {"maxTokens": max_tokens, "temperature": temperature},
        }
        if system and "titan" in self.model_id:
            turns[0]["content"].insert(0, {"text": "\n\n".join(system)})
        elif system:
            request["system"] = [{"text": text} for text in system]
        if schema is not None and self.tool_use:
            request["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": TOOL_NAME,
                            "description": "Record the answer as structured data.",
                            "inputSchema": {"json": dict(schema)},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": TOOL_NAME}},
            }
        return request

    def _reply(self, response: Any, latency: float) -> ChatReply:
        try:
            blocks = response["output"]["message"]["content"]
            raw_usage = response.get("usage") or {}
            usage = Usage(
                prompt_tokens=int(raw_usage.get("inputTokens") or 0),
                completion_tokens=int(raw_usage.get("outputTokens") or 0),
            )
            texts = [b["text"] for b in blocks if "text" in b]
            tool_inputs = [b["toolUse"].get("input") for b in blocks if "toolUse" in b]
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise LLMError(f"Bedrock converse with {self.model_id} returned an unexpected response: {e!r}") from e
        parsed = tool_inputs[0] if tool_inputs else None
        text = json.dumps(parsed, ensure_ascii=False) if parsed is not None else "".join(texts)
        stop = response.get("stopReason")
        finish = {"end_turn": "stop", "tool_use": "stop", "max_tokens": "length"}.get(stop, stop)
        return ChatReply(
            text=text,
            parsed=parsed,
            usage=usage,
            latency=latency,
            model=self.model_id,
            finish_reason=finish if isinstance(finish, str) else None,
        )
