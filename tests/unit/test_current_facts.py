"""Current facts from what people say, through the public API: moves told in the first person plural or in the same
``add`` as the old fact close it, and named pets (breeds, "called", "our dog X") become typed memories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memlane import Memory, Message
from memlane.models import MemoryItem, MemoryKind

EARLIER, LATER = "2024-01-10T10:00:00+00:00", "2024-06-01T10:00:00+00:00"


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory(":memory:", embedder="hash") as m:
        yield m


def say(memory: Memory, user: str, text: str, *, session: str = "s1", at: str = LATER, name: str = "Kim") -> None:
    memory.add([Message(role="user", name=name, content=text)], user_id=user, session_id=session, timestamp=at)


def typed(memory: Memory, user: str, *, superseded: bool = False) -> list[MemoryItem]:
    items = memory.list(user_id=user, filters={"include_superseded": True} if superseded else None)
    return [m for m in items if m.kind is not MemoryKind.MESSAGE]


def claim(item: MemoryItem) -> tuple[object, object]:
    return item.metadata.get("attribute"), item.metadata.get("value")


def only(items: list[MemoryItem], attribute: str, value: str) -> MemoryItem:
    found = [m for m in items if claim(m) == (attribute, value)]
    assert len(found) == 1, [(m.text, claim(m)) for m in items]
    return found[0]


def test_we_moved_in_a_later_session_closes_the_old_residence(memory: Memory) -> None:
    say(memory, "kim", "I live in Boston.", at=EARLIER)
    say(memory, "kim", "We moved from Boston to Denver last month.", session="s2")
    current = typed(memory, "kim")
    denver = only(current, "residence", "Denver")
    assert denver.kind is MemoryKind.FACT and denver.metadata["subject"] == "Kim"
    assert not [m for m in current if claim(m) == ("residence", "Boston")]
    boston = only(typed(memory, "kim", superseded=True), "residence", "Boston")
    assert boston.superseded_by == denver.id and boston.valid_until is not None
    assert boston.valid_until.date().isoformat() == "2024-05-01"  # from when the move happened: last month


def test_a_move_in_the_same_add_as_the_old_fact_supersedes_it(memory: Memory) -> None:
    say(memory, "lee", "I live in Boston and work at Acme. I moved to Denver last month.", name="Lee")
    current = typed(memory, "lee")
    denver = only(current, "residence", "Denver")
    assert only(current, "employer", "Acme").text == "Lee works at Acme."
    assert not [m for m in current if claim(m) == ("residence", "Boston")]
    assert only(typed(memory, "lee", superseded=True), "residence", "Boston").superseded_by == denver.id
    # the claim's topic comes from the claim, not from the embedder's reading of the text
    assert denver.category == "travel"


def test_the_same_move_said_over_two_messages_of_one_add(memory: Memory) -> None:
    memory.add(
        [
            Message(role="user", name="Lee", content="I live in Boston and I work at Acme."),
            Message(role="user", name="Lee", content="Actually I moved to Denver last month."),
        ],
        user_id="lee",
        session_id="s1",
        timestamp=LATER,
    )
    current = typed(memory, "lee")
    assert only(current, "residence", "Denver").is_current
    assert only(current, "employer", "Acme").category == "work"
    assert not [m for m in current if claim(m) == ("residence", "Boston")]


@pytest.mark.parametrize(
    "text",
    [
        "We relocated to Denver last month.",
        "We now live in Denver.",
        "We're living in Denver these days.",
        "I've moved back to Denver.",
        "We finally moved house to Denver in March.",
    ],
)
def test_other_ways_of_saying_a_move_close_the_old_residence(memory: Memory, text: str) -> None:
    say(memory, "kim", "I live in Boston.", at=EARLIER)
    say(memory, "kim", text, session="s2")
    current = typed(memory, "kim")
    assert only(current, "residence", "Denver").category == "travel"
    assert not [m for m in current if claim(m) == ("residence", "Boston")]


def test_a_state_said_after_the_move_in_the_same_add_stays_closed(memory: Memory) -> None:
    say(memory, "lee", "I moved to Denver last month. I live in Boston.", name="Lee")
    assert only(typed(memory, "lee"), "residence", "Denver").is_current
    assert not [m for m in typed(memory, "lee") if claim(m) == ("residence", "Boston")]


def test_of_two_dated_moves_the_earlier_one_stays_closed(memory: Memory) -> None:
    say(memory, "kim", "I moved to Denver in 2020.", at=EARLIER)
    say(memory, "kim", "Back in 2015 I moved to Boston.", session="s2")
    current = typed(memory, "kim")
    assert only(current, "residence", "Denver").is_current
    boston = only(typed(memory, "kim", superseded=True), "residence", "Boston")
    assert not boston.is_current and boston.superseded_by is not None


@pytest.mark.parametrize(
    "text",
    [
        "We moved to Postgres because the old database was slow.",
        "We moved to Kubernetes last year.",
        "We moved the meeting to Friday.",
        "We live in a tiny flat.",
    ],
)
def test_what_is_no_move_leaves_the_residence_alone(memory: Memory, text: str) -> None:
    say(memory, "kim", "I live in Boston.", at=EARLIER)
    say(memory, "kim", text, session="s2")
    assert [claim(m) for m in typed(memory, "kim") if claim(m)[0] == "residence"] == [("residence", "Boston")]


def test_a_move_told_with_work_words_is_still_a_move(memory: Memory) -> None:
    say(memory, "kim", "I live in Boston.", at=EARLIER)
    say(memory, "kim", "We moved to Denver in May and I now work for a cloud software company.", session="s2")
    assert only(typed(memory, "kim"), "residence", "Denver").is_current


@pytest.mark.parametrize(
    ("text", "pets"),
    [
        ("I adopted a border collie called Pepper.", [("Pepper", "border collie")]),
        ("We got a kitten named Luna last week.", [("Luna", "kitten")]),
        ("I have a cat called Miso.", [("Miso", "cat")]),
        ("Our dog Rex loves the beach.", [("Rex", "dog")]),
        ("My partner and I rescued a greyhound named Bolt.", [("Bolt", "greyhound")]),
        ("We have two cats called Tom and Jerry.", [("Tom", "cat"), ("Jerry", "cat")]),
    ],
)
def test_a_named_pet_is_an_entity_with_its_name_and_animal(
    memory: Memory, text: str, pets: list[tuple[str, str]]
) -> None:
    say(memory, "ann", text, name="Ann")
    found = {(m.metadata["attribute"], m.metadata["value"]): m for m in typed(memory, "ann")}
    for name, animal in pets:
        pet = found[(f"pet {name.lower()}", animal)]
        assert pet.kind is MemoryKind.ENTITY
        assert pet.text == f"{name} is Ann's {animal}."
        assert name.lower() in pet.entities and pet.category == "family"


def test_a_pet_someone_only_saw_is_not_theirs(memory: Memory) -> None:
    say(memory, "ann", "I saw a dog called Max at the park.", name="Ann")
    assert not [m for m in typed(memory, "ann") if str(m.metadata.get("attribute", "")).startswith("pet ")]
