"""``MemlaneSession`` in the Agents SDK's own flow: ``Runner.run`` with the session and the SDK's ``ScriptedModel``
(its deterministic model stand-in): the second run's model call sees the first run's conversation, read back from
memlane, tool calls and outputs included; over an embedded ``Memory``, a ``Client`` and an ``AsyncClient`` of a real
server (awaited natively: the session's methods are coroutines)."""

from __future__ import annotations

import json

import anyio
import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from memlane.integrations.calls import acall
from memlane.integrations.openai_agents import MemlaneSession
from tests.integrations.conftest import Backend


@function_tool
def pet_registry(species: str) -> str:
    """Look up the user's registered pets of a species."""
    return f"one {species}: a border collie"


def test_a_run_keeps_its_conversation_in_memlane(backend: Backend, user: str) -> None:
    model = ScriptedModel(
        [
            [assistant_message("What a lovely name!")],
            [function_call("pet_registry", {"species": "dog"}, call_id="call-1")],
            [assistant_message("Your dog is Pepper, a border collie.")],
        ]
    )
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[pet_registry])

    async def main() -> None:
        async with backend.open() as memory:
            session = MemlaneSession("chat-1", memory, user_id=user, agent_id="helper")
            await Runner.run(agent, "My dog is called Pepper", session=session)
            result = await Runner.run(agent, "What is my dog called, and what breed?", session=session)
            assert result.final_output == "Your dog is Pepper, a border collie."
            items = await session.get_items()
            seen = json.dumps(model.calls[1].input)  # the second run's first model call
            assert "My dog is called Pepper" in seen and "What a lovely name!" in seen
            assert [i.get("role") or i.get("type") for i in items] == [
                "user",
                "assistant",
                "user",
                "function_call",
                "function_call_output",
                "assistant",
            ]
            assert items[4]["output"] == "one dog: a border collie"
            # each item is a memory of the user in memlane session chat-1, searchable with the rest of their memory
            listed = await acall(memory, "list", user_id=user, filters={"session_id": "chat-1"})
            assert [m.text for m in listed][:2] == ["My dog is called Pepper", "What a lovely name!"]
            hits = await acall(memory, "search", "dog called", user_id=user)
            assert "My dog is called Pepper" in [h.memory.text for h in hits]

            last = await session.pop_item()
            latest = await session.get_items(limit=2)
            assert last == items[-1] and latest == items[3:5]
            await session.clear_session()
            assert await session.get_items() == [] and await session.pop_item() is None
            left = await acall(memory, "list", user_id=user, filters={"session_id": "chat-1", "kind": "message"})
            assert left == []

    anyio.run(main)


def test_the_documented_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = readme.split("\n## OpenAI Agents SDK\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    swaps = {
        'Memory("memories.db")': 'Memory(":memory:", embedder="hash")',
        'instructions="Be brief.")': 'instructions="Be brief.", model=ScriptedModel([[assistant_message("Nice!")]]))',
    }
    for old, new in swaps.items():
        assert old in code
        code = code.replace(old, new)
    namespace = {"ScriptedModel": ScriptedModel, "assistant_message": assistant_message}
    exec(compile(code, "docs/integrations.md", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "My dog is called Pepper"
