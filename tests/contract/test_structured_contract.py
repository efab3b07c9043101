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


def test_word_groups_match_the_memorys_own_words_as_the_text_index_reads_them(memory: Memory) -> None:
    """Hyphens, apostrophes, accents and stems are read as the text index reads them; a word only in the previous
    turn does not match; every group must hold; another user's memories never match.
    """
    from memlane.structured.query import Match, MemorySelect

    texts = [
        "We met O'Neil at the well-known café in Zürich.",
        "Running shoes are runners' favourite.",
        "I don't like Mondays",
        "well known places",
    ]
    ids = [it.id for it in memory.add([{"role": "user", "content": t} for t in texts], user_id="u").items]
    memory.add([{"role": "user", "content": t} for t in texts], user_id="other")

    def matching(*groups: tuple[str, ...]) -> list[int]:
        rows = memory._store.select_memories("u", MemorySelect(match=Match(terms=groups), limit=10)).rows
        return sorted(ids.index(r.memory_id) for r in rows)

    assert matching(("o'neil",)) == [0]
    assert matching(("well-known",)) == [0, 3]
    assert (
        matching(("cafe",)) == matching(("café",)) == matching(("zurich",)) == [0]
    )  # turn 1 holds them only as its previous turn
    assert matching(("run",)) == matching(("runners",)) == [1]
    assert matching(("don't",)) == [2] and matching(("dont",)) == []
    assert matching(("monday",)) == [2]
    assert matching(("places", "shoes")) == [1, 3]
    assert matching(("places", "shoes"), ("running",)) == [1]
