"""The structured-question contract: every backend answers the typed primitives the same way, scoped by user."""

from __future__ import annotations

from datetime import UTC, datetime

from memlane import Memory

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def seed(memory: Memory) -> None:
    memory.observe(
        [
            {"caption": "[person_1:Person] waters the [plant_1:Object]", "timestamp": "2026-03-02T09:00:00Z",
             "names": {"person_1": "Dana"}},
            {"caption": "[person_1:Person] waters the [plant_1:Object]", "timestamp": "2026-03-04T09:00:00Z"},
            {"caption": "[person_2:Person] feeds the [cat_1:Animal]", "timestamp": "2026-03-04T18:00:00Z",
             "names": {"person_2": "Sam"}},
        ],
        user_id="home",
    )  # fmt: skip
    memory.observe({"caption": "[person_1:Person] waters the [plant_1:Object]", "timestamp": "2026-03-03T09:00:00Z",
                    "names": {"person_1": "Dana"}}, user_id="elsewhere")  # fmt: skip


def test_count_exists_list_first_last_range(memory: Memory) -> None:
    seed(memory)
    now = datetime(2026, 3, 9, tzinfo=UTC)

    def ask(question: str) -> object:
        answer = memory.ask(question, user_id="home", now=now)
        assert answer.structured is not None, question
        return answer.structured.value

    assert ask("How many times did Dana water the plant?") == 2
    assert ask("Did Sam ever water the plant?") is False
    assert ask("Who watered the plant?") == ["Dana"]
    assert ask("Which objects did Dana water?") == ["plant_1"]
    assert ask("When did Dana last water the plant?") == "2026-03-04"
    assert ask("When did Dana first water the plant?") == "2026-03-02"
    assert ask("What happened on 4 March 2026?") == "2 memories"
