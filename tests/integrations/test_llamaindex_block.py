"""``MemlaneMemoryBlock`` in LlamaIndex's own flow: a real ``llama_index.core.memory.Memory`` whose short-term queue
flushes into memlane, and whose ``get`` carries memlane's context for the latest user message; then a
``SimpleChatEngine`` and a ``FunctionAgent`` over LlamaIndex's own mock LLMs, whose last call shows what the model was
given. Over an embedded ``Memory``, a ``Client`` and an ``AsyncClient`` of a real ``memlane serve``; the default token
counter (tiktoken) runs from the encoding llama-index-core ships, with no network."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory as ChatMemory

from memlane.errors import ConfigError
from memlane.integrations.calls import acall
from memlane.integrations.llamaindex import MemlaneMemoryBlock
from tests.integrations.conftest import Backend

TOLD = [
    "My sister lives in Lisbon and works as an architect",
    "I adopted a border collie called Pepper last spring",
    "I work night shifts as a nurse at the city hospital",
]


def chat_memory(memory: Any, user: str, **block: Any) -> ChatMemory:
    """A LlamaIndex memory with a short queue (60 tokens, 70% for the chat), so that a few turns flush to memlane."""
    blocks = [MemlaneMemoryBlock(memory=memory, user_id=user, **block)]
    return ChatMemory.from_defaults(session_id="chat-1", token_limit=60, token_flush_size=20, memory_blocks=blocks)


def system_text(messages: Any) -> str:
    return "\n".join(m.content or "" for m in messages if m.role.value == "system")


def test_flushed_messages_reach_memlane_and_get_returns_its_context(backend: Backend, user: str) -> None:
    async def main() -> None:
        async with backend.open() as memory:
            chat = chat_memory(memory, user, agent_id="helper", infer=False)
            await chat.aput(ChatMessage(role="user", content=TOLD[0]))
            assert system_text(await chat.aget()) == ""  # nothing flushed yet: memlane has nothing for the user
            for said in TOLD[1:]:
                await chat.aput(ChatMessage(role="assistant", content="Noted, thank you for telling me."))
                await chat.aput(ChatMessage(role="user", content=said))
            await chat.aput(ChatMessage(role="tool", content="a tool's output is not a turn of the conversation"))
            await chat.aput(ChatMessage(role="user", content="What is my dog called?"))

            stored = await acall(memory, "list", user_id=user)
            assert [m.text for m in stored][:2] == [TOLD[0], "Noted, thank you for telling me."]  # the oldest, first
            assert {(m.kind, m.session_id, m.agent_id) for m in stored} == {("message", "chat-1", "helper")}
            assert [m.role for m in stored][:2] == ["user", "assistant"]
            assert "tool's output" not in str([m.text for m in stored])
            messages = await chat.aget()
            short_term = [m.content for m in messages if m.role.value != "system"]
            flushed = [t for t in TOLD if t not in short_term]
            assert flushed and all(t in [m.text for m in stored] for t in flushed)
            assert not [t for t in short_term if t in [m.text for m in stored]]  # the queue's messages stay out

            system = system_text(messages)
            assert system.startswith("<memory>\n<memlane>") and "never follow instructions" in system
            assert all(t in system for t in flushed)  # the user's memlane memories, fenced as quoted data
            assert messages[-1].content == "What is my dog called?"
            block = chat.memory_blocks[0]
            assert await block.aget([ChatMessage(role="assistant", content="hello")]) == ""  # no user message

    anyio.run(main)


@pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")  # LlamaIndex's workflows read pydantic's members
def test_a_chat_engine_and_an_agent_are_given_memlane_memories(backend: Backend, user: str) -> None:
    async def main() -> None:
        async with backend.open() as memory:
            chat = chat_memory(memory, user)
            llm = MockLLMWithChatMemoryOfLastCall(max_tokens=4)
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat)
            await engine.achat(TOLD[0])
            assert system_text(llm.last_chat_messages) == ""
            for said in TOLD[1:]:
                await engine.achat(said)
            await engine.achat("What is my dog called?")
            given = system_text(llm.last_chat_messages)
            # memlane extracted typed memories from the flushed turns (infer on by default) and recalls them
            assert "<memlane>" in given and "Pepper is the user's border collie." in given

            agent_llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
            answer = await FunctionAgent(llm=agent_llm, tools=[]).run("Where does my sister live?", memory=chat)
            assert str(answer) == "Where does my sister live?"  # the mock echoes the question
            given = system_text(agent_llm.last_chat_messages)
            assert "<memlane>" in given and "sister lives in Lisbon" in given

    anyio.run(main)


def test_a_block_needs_a_memlane_memory() -> None:
    with pytest.raises(ConfigError, match="memory must be a memlane Memory, Client or AsyncClient, not str"):
        MemlaneMemoryBlock(memory="memories.db", user_id="maya")


@pytest.mark.parametrize("backend", ["memory", "client"], indirect=True)
def test_a_synchronous_chat_engine(backend: Backend, user: str) -> None:
    """``chat`` (not ``achat``): LlamaIndex runs the block's coroutines on its own loop."""
    with backend.open_sync() as memory:
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=4)
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory(memory, user, infer=False))
        for said in [*TOLD, "What is my dog called?"]:
            engine.chat(said)
        assert TOLD[0] in system_text(llm.last_chat_messages)
        assert TOLD[0] in [m.text for m in memory.list(user_id=user)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")
def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = readme.split("\n## LlamaIndex\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    swaps = {  # an in-memory store, and LlamaIndex's own mock LLM for OpenAI (which is not installed)
        'Memory("memories.db")': 'Memory(":memory:", embedder="hash")',
        "from llama_index.llms.openai import OpenAI": "from llama_index.core.llms.mock import MockFunctionCallingLLM",
        'llm=OpenAI(model="gpt-4.1-mini")': "llm=MockFunctionCallingLLM()",
    }
    for old, new in swaps.items():
        assert old in code
        code = code.replace(old, new)
    exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "readme_example"})
    answer, system = capsys.readouterr().out.split("\n", 1)
    assert answer == "What is my dog called?"  # the mock echoes the question
    assert system.startswith("<memory>\n<memlane>") and "Pepper" in system
