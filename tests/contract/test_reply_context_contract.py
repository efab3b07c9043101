"""An update or delete of a turn keeps the next turn's previous-turn words (the text index's context) by the
reply-only rule, on every backend, through the read model and the SQL full-text path alike.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

from memlane import Memory

SINCE = {"since": datetime(2000, 1, 1, tzinfo=UTC)}  # a filter the read model does not serve: the SQL text path

TURNS = [
    {"role": "user", "name": "Ana", "content": "My locker code is 7 quixotrel."},
    {"role": "assistant", "content": "Got it, I'll keep that in mind."},
    {"role": "user", "name": "Ana", "content": "Thanks for the help."},
    {"role": "user", "name": "ana", "content": "See you tomorrow."},  # the same speaker again: no context
]


def _found(memory: Memory, query: str) -> list[set[str]]:
    """The texts a BM25 search finds, without filters (the read model) and with one (SQL)."""
    return [
        {h.memory.text for h in memory.search(query, user_id="ana", preset_name="bm25", filters=filters)}
        for filters in (None, SINCE)
    ]


def _turns(memory: Memory) -> list[str]:
    return [it.id for it in memory.add(TURNS, user_id="ana", session_id="gym").items]


def test_an_update_gives_a_reply_the_new_words_and_a_same_speaker_turn_none(memory: Memory) -> None:
    ids = _turns(memory)
    assert _found(memory, "quixotrel") == [{TURNS[0]["content"], TURNS[1]["content"]}] * 2
    memory.update(ids[0], user_id="ana", text="My locker is number 12.")
    assert _found(memory, "quixotrel") == [set(), set()]
    assert _found(memory, "number") == [{"My locker is number 12.", TURNS[1]["content"]}] * 2
    memory.update(ids[2], user_id="ana", text="Thanks, zebulon.")  # the next turn is Ana's again: not its context
    assert _found(memory, "zebulon") == [{"Thanks, zebulon."}] * 2
    assert _found(memory, "help") == [set(), set()]


def test_a_delete_takes_a_turns_words_out_of_the_next_turns_context(memory: Memory) -> None:
    ids = _turns(memory)
    assert _found(memory, "mind") == [{TURNS[1]["content"], TURNS[2]["content"]}] * 2
    memory.delete(ids[1], user_id="ana")
    assert _found(memory, "mind") == [set(), set()]
    memory.delete(ids[2], user_id="ana")
    assert _found(memory, "help") == [set(), set()]
    assert _found(memory, "tomorrow") == [{TURNS[3]["content"]}] * 2


# Speakers that are one under casefold but not under lower(): "ß" folds to "ss", and a final sigma to a sigma.
# (lower() of the earlier name is not the later one's casefold: lower('Straße') is 'straße', and lower('Élodie')
# keeps its 'É' in a database of the C locale.)
ONE_SPEAKER = [
    {"role": "user", "name": "Straße", "content": "My locker code is 7 quixotrel."},
    {"role": "user", "name": "STRASSE", "content": "Bring the zebulon badge."},  # the same speaker: no context
    {"role": "assistant", "content": "Noted."},  # a reply: the badge's words
    {"role": "user", "name": "Οδυσσευς", "content": "The harbour opens at dawn."},  # a reply: "Noted."
    {"role": "user", "name": "ΟΔΥΣΣΕΥΣ", "content": "Wake me early."},  # the same speaker again
    {"role": "assistant", "name": "Élodie", "content": "Your pelican is fed."},  # a reply
    {"role": "assistant", "name": "ÉLODIE", "content": "And watered."},  # the same speaker again
]
# The texts a search for a word finds: its own turn, and the turn after it when that one replies to it.
EXPECTED = {
    "quixotrel": {ONE_SPEAKER[0]["content"]},
    "zebulon": {ONE_SPEAKER[1]["content"], ONE_SPEAKER[2]["content"]},
    "harbour": {ONE_SPEAKER[3]["content"]},
    "pelican": {ONE_SPEAKER[5]["content"]},
}


def test_speakers_one_under_casefold_are_one_speaker_in_one_add(memory: Memory) -> None:
    memory.add(ONE_SPEAKER, user_id="ana", session_id="dock")
    assert {word: _found(memory, word) for word in EXPECTED} == {w: [t, t] for w, t in EXPECTED.items()}


def test_speakers_one_under_casefold_are_one_speaker_across_adds_and_an_import(memory: Memory) -> None:
    for turn in ONE_SPEAKER:  # each turn's previous turn is the stored last turn of the session
        memory.add(turn, user_id="ana", session_id="dock")
    assert {word: _found(memory, word) for word in EXPECTED} == {w: [t, t] for w, t in EXPECTED.items()}
    buffer = io.StringIO()
    memory.export(buffer, user_id="ana")
    memory.delete_all(user_id="ana")
    assert memory.import_(io.StringIO(buffer.getvalue()), user_id="ana") == len(ONE_SPEAKER)  # positions kept
    assert {word: _found(memory, word) for word in EXPECTED} == {w: [t, t] for w, t in EXPECTED.items()}
