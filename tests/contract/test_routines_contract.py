"""Routines: recurring actions detected in dated turns, stored as memories of kind ``routine``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memlane import Memory, MemoryKind
from memlane.lifecycle.routines import activities, detect_routines
from memlane.models import MemoryItem

SAT = datetime(2024, 6, 1, 8, 30, tzinfo=UTC)  # a Saturday morning


def say(memory: Memory, text: str, at: datetime, name: str = "Maya") -> str:
    return (
        memory.add([{"role": "user", "name": name, "content": text, "timestamp": at.isoformat()}], user_id="u")
        .items[0]
        .id
    )


def test_activities_are_read_from_first_person_turns() -> None:
    assert activities("I went running this morning.") == ["running"]
    assert activities("We hiked up the ridge, then I called my mum.") == ["hiking", "calling their mum"]
    assert activities("Would you go running with me?") == []
    assert activities("If I jogged more I'd be fitter.") == []


def test_a_weekly_run_is_a_routine_with_its_evidence(memory: Memory) -> None:
    ids = [say(memory, "I went running along the river.", SAT + timedelta(weeks=w)) for w in range(4)]
    say(memory, "I went running after work.", SAT + timedelta(days=3, hours=10))  # a Tuesday evening
    say(memory, "I went swimming.", SAT + timedelta(days=1))  # once only: no routine
    say(memory, "I went running too!", SAT, name="Leo")  # someone else's run
    [routine] = memory.routines(user_id="u")
    assert routine.kind is MemoryKind.ROUTINE
    assert routine.text.startswith("Routine of Maya: running most Saturday mornings (5 times from 2024-06-01")
    assert routine.metadata["value"] == "Saturday" and routine.metadata["occurrences"] == 5
    assert {s.memory_id for s in routine.sources} >= set(ids)
    assert 0.6 < routine.confidence < 1.0
    assert memory.list(user_id="u", filters={"kind": "routine"}) == [routine]
    # found again: the same memory; one more Saturday: updated in place, more confident
    assert [r.id for r in memory.routines(user_id="u")] == [routine.id]
    say(memory, "I went running in the park.", SAT + timedelta(weeks=5))
    [again] = memory.routines(user_id="u")
    assert again.id == routine.id and again.confidence > routine.confidence
    assert "6 times" in again.text
    hits = memory.search("what does Maya do on Saturdays?", user_id="u", filters={"kind": "routine"})
    assert hits and hits[0].memory.id == routine.id


def test_days_without_a_pattern_give_a_plain_regular_routine() -> None:
    days = [SAT + timedelta(days=d) for d in (0, 2, 4, 8, 11)]
    items = [
        MemoryItem(
            id=f"m{i}",
            user_id="u",
            text="I played tennis.",
            timestamp=at.replace(hour=0, minute=0),
            created_at=at,
            updated_at=at,
            content_hash=f"h{i}",
            speaker="Ana",
            role="user",
        )
        for i, at in enumerate(days)
    ]
    [routine] = detect_routines(items)
    assert (routine.activity, routine.weekday, routine.part_of_day) == ("playing tennis", None, None)
    assert routine.text.startswith("Routine of Ana: playing tennis regularly (5 times")
    assert detect_routines(items[:2]) == []
