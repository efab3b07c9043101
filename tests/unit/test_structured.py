"""Structured questions: typed queries validated, compiled to bound SQL, translated by rules, run on a store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane import Memory
from memlane.enrich.entities import AliasRow
from memlane.errors import ValidationError
from memlane.structured.query import Match, MemorySelect, Op, SelectedMemory, StructuredQuery
from memlane.structured.rules import Vocabulary, translate
from memlane.structured.run import occurrences, run_query

NOW = datetime(2026, 3, 9, tzinfo=UTC)


def t(day: int, hour: int = 12, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


@pytest.fixture
def memory():
    m = Memory(":memory:", embedder="hash")
    m.observe(
        [
            {"caption": "[person_1:Person] waters the [plant_1:Object]", "timestamp": t(2, 9), "end": t(2, 9, 0, 10),
             "names": {"person_1": "Dana", "person_2": "Sam"}, "stream": "cam"},
            {"caption": "[person_2:Person] loads the [mug_1:Object] into the [dishwasher_1:Object]",
             "timestamp": t(2, 19), "end": t(2, 19, 0, 10), "stream": "cam"},
            {"caption": "[person_2:Person] loads the [plate_1:Object] into the [dishwasher_1:Object]",
             "timestamp": t(2, 19, 0, 5), "end": t(2, 19, 0, 15), "stream": "cam"},
            {"caption": "[person_1:Person] waters the [plant_1:Object]", "timestamp": t(4, 9), "end": t(4, 9, 0, 10),
             "stream": "cam"},
            {"caption": "[person_2:Person] loads the [plate_1:Object] into the [dishwasher_1:Object]",
             "timestamp": t(5, 19), "end": t(5, 19, 0, 10), "stream": "cam"},
        ],
        user_id="home",
    )  # fmt: skip
    m.add([{"role": "user", "name": "Dana", "content": "I booked a dentist appointment."}], user_id="home",
          session_id="s1", timestamp=t(3, 20), infer=False)  # fmt: skip
    yield m
    m.close()


def test_query_objects_refuse_what_they_cannot_bind() -> None:
    with pytest.raises(ValidationError, match="not one word"):
        Match(terms=(('x"); DROP TABLE memories; --',),))
    with pytest.raises(ValidationError, match="versus"):
        StructuredQuery(Op.ORDER, Match(terms=(("a",),)))
    with pytest.raises(ValidationError, match="since or until"):
        StructuredQuery(Op.RANGE, Match(subject="dana"))
    with pytest.raises(ValidationError, match="at least one condition"):
        StructuredQuery(Op.COUNT, Match())
    with pytest.raises(ValidationError, match="since must be before until"):
        Match(subject="x", since=t(3), until=t(2))


def test_names_are_bound_parameters_never_sql(memory) -> None:
    hostile = "dana'); DROP TABLE memories; --"
    rows = memory._store.select_memories("home", MemorySelect(Match(subject=hostile)))
    assert rows.rows == ()
    assert hostile not in rows.statement.sql and hostile in rows.statement.params
    assert memory.stats(user_id="home").memories == 6  # nothing dropped


def test_user_scope_is_in_every_statement(memory) -> None:
    match = Match(terms=(("waters",),))
    assert len(memory._store.select_memories("home", MemorySelect(match)).rows) == 2
    assert memory._store.select_memories("someone-else", MemorySelect(match)).rows == ()


def test_occurrences_merge_overlapping_windows_and_sessions() -> None:
    def row(i: str, start: datetime, end: datetime | None, role: str, session: str | None) -> SelectedMemory:
        return SelectedMemory(i, session, role, start, end)

    rows = [
        row("a", t(2, 19), t(2, 19, 0, 10), "observation", "cam"),
        row("b", t(2, 19, 0, 5), t(2, 19, 0, 15), "observation", "cam"),  # overlaps a
        row("c", t(2, 19, 1), t(2, 19, 1, 10), "observation", "cam"),  # after the chain
        row("d", t(3), None, "user", "s1"),
        row("e", t(3, 13), None, "assistant", "s1"),  # same session as d
        SelectedMemory("f", "s1", "observation", t(3, 14), None, attached=True),  # a photo shared in s1
    ]
    assert [[r.memory_id for r in g] for g in occurrences(rows)] == [["a", "b"], ["c"], ["d", "e", "f"]]


@pytest.mark.parametrize(
    ("question", "op", "answer"),
    [
        ("How many times did Sam load the dishwasher?", Op.COUNT, "2"),
        ("How often did Dana water the plant?", Op.COUNT, "2"),
        ("Did Sam ever water the plant?", Op.EXISTS, "no"),
        ("Has Dana ever mentioned a dentist appointment?", Op.EXISTS, "yes"),
        ("Which objects did Sam load into the dishwasher?", Op.LIST, "plate_1, mug_1"),  # most involved first
        ("Who watered the plant?", Op.LIST, "Dana"),
        ("Did Dana water the plant before Sam loaded the dishwasher?", Op.ORDER, "yes"),
    ],
)
def test_rules_route_and_answer(memory, question: str, op: Op, answer: str) -> None:
    got = memory.ask(question, user_id="home", now=NOW)
    assert got.route == "structured" and got.structured is not None
    assert got.structured.op is op
    assert got.structured.answer.split(":")[0] == answer


def test_first_last_and_range(memory) -> None:
    first = memory.ask("When did Sam first load the dishwasher?", user_id="home", now=NOW).structured
    last = memory.ask("When did Sam last load the dishwasher?", user_id="home", now=NOW).structured
    assert first is not None and last is not None
    assert (first.value, last.value) == ("2026-03-02", "2026-03-05")
    assert "plate_1" in last.answer
    day = memory.ask("What happened on 4 March 2026?", user_id="home", now=NOW).structured
    assert day is not None and day.op is Op.RANGE
    assert [m.text for m in day.memories] == ["Dana waters the plant_1"]


def test_questions_no_rule_claims_go_to_search(memory) -> None:
    answer = memory.ask("what appointment did Dana book?", user_id="home", now=NOW)
    assert answer.route == "search" and answer.structured is None
    assert answer.hits and answer.answer == answer.hits[0].memory.text


def test_explain_shows_the_query_its_sql_and_result(memory) -> None:
    lines = memory.ask("How many times did Sam load the dishwasher?", user_id="home", now=NOW).explain()
    text = "\n".join(lines)
    assert "count (occurrences): by 'sam', saying 'load'" in text
    assert "sql: SELECT" in text and "params: ['home', 'sam'" in text
    assert "result: 2" in text


def test_vocabulary_ignores_names_made_of_function_words() -> None:
    vocab = Vocabulary.from_rows(
        [AliasRow("the", "the overstory", "product", "The Overstory"), AliasRow("dana", "dana", "person", "Dana")]
    )
    translation = translate("How many times did Dana read the book?", vocab, NOW)
    assert translation is not None
    assert translation.query.match.entities == () and translation.query.match.subject == "dana"


def test_run_query_counts_memories_when_asked(memory) -> None:
    from memlane.structured.query import Unit

    query = StructuredQuery(Op.COUNT, Match(subject="sam", terms=(("load",),)), unit=Unit.MEMORIES)
    assert run_query(memory._store, "home", query).value == 3


def test_a_presumption_that_finds_nothing_hands_over_to_search(memory) -> None:
    answer = memory.ask("Which objects did Sam water?", user_id="home", now=NOW)
    assert answer.route == "search" and "found nothing" in answer.reason
    assert memory.ask("Did Sam ever water the plant?", user_id="home", now=NOW).route == "structured"  # "no" answers


@pytest.mark.parametrize(
    "question",
    ["How often does Dana water the plant?", "Did Dana and Sam both load the dishwasher?", "When did Dana water it?"],
)
def test_rules_decline_habits_joins_and_plain_when(question: str) -> None:
    vocab = Vocabulary.from_rows([AliasRow("dana", "dana", "person", "Dana"), AliasRow("sam", "sam", "person", "Sam")])
    assert translate(question, vocab, NOW) is None


def test_a_range_question_about_a_topic_is_left_to_search() -> None:
    vocab = Vocabulary.from_rows([AliasRow("john", "john", "person", "John")])
    assert translate("What happened to John's job in August 2023?", vocab, NOW) is None
    assert translate("What did John plan to do on 7 July 2023?", vocab, NOW) is None
    claimed = translate("What did John do on 7 July 2023?", vocab, NOW)
    assert claimed is not None and claimed.query.op is Op.RANGE and claimed.query.match.subject == "john"
