"""The shape of a query: how long it is, how many turns of dialogue it holds, and whether it ends in a question.

The planner reads the shape to weigh the dimensions: a short question is matched by its words, while a dialogue
excerpt pasted as the query (several ``Speaker: text`` turns) is mostly about something else than what it seeks,
so keyword matching over all of its words adds noise and only its last turn says what is wanted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from memlane.enrich.entities import is_sentence_start, never_a_name

# A speaker label of one to four words.
_LABEL: Final = r"[^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*){0,3}"
# A turn of dialogue at the start of a line, its label in any of the common forms: "Name: text" (no URL scheme),
# "<Name>: text" and "<Name> text" (chat logs), "[Name] text", "**Name**: text" and "**Name:** text" (Markdown).
_TURN: Final = re.compile(
    rf"^\s*(?:<(?P<angle>{_LABEL})>\s*:?|\[(?P<square>{_LABEL})\]\s*:?|\*\*(?P<bold>{_LABEL})\*\*\s*:"
    rf"|\*\*(?P<boldin>{_LABEL}):\*\*|(?P<plain>{_LABEL})\s*:(?!//))\s+(?=\S)",
    re.UNICODE,
)
_LABEL_GROUPS: Final = ("angle", "square", "bold", "boldin", "plain")
# A line that is one quoted utterance ("I went to the group yesterday."): a turn whose speaker is not named.
_QUOTES: Final = {'"': '"', "“": "”", "„": "“", "«": "»", "'": "'", "‘": "’"}
_SENTENCE_END: Final = re.compile(r"[.!?]+(?=\s|$)")
_WORD: Final = re.compile(r"\w+", re.UNICODE)
_WORD_START: Final = re.compile(r"\b[^\W\d_][\w'’-]*", re.UNICODE)
# Over this many words, a single-line query is read as a passage rather than a question.
LONG_QUERY_WORDS: Final = 40


@dataclass(frozen=True)
class QueryShape:
    """Counts read off the query text alone.

    ``turns`` counts the lines that start with a speaker label (0 for an ordinary query); ``last_turn`` is the text
    of the last non-empty line, without its speaker label: what a dialogue excerpt asks for.
    """

    words: int
    lines: int
    turns: int
    sentences: int
    is_question: bool
    last_turn: str
    # the speaker labels of the turns ("Sam" of "Sam: You look shattered."), and the turns' text without them
    speakers: tuple[str, ...] = ()
    said: str = ""
    # whether the last line is itself a turn of the conversation ("Sam: When was that?"), not a question put after it
    last_is_turn: bool = False

    @property
    def is_follow_up(self) -> bool:
        """An excerpt whose last line is one speaker's turn naming no one ("Friend: When did you start?"): a
        follow-up, whose words are the conversation's ("start", "year"); what it is about is in the turns before.
        A question put after the turns ("What did Maria paint?") or one naming someone is not one.
        """
        return self.turns >= 2 and self.last_is_turn and not names_someone(self.last_turn)

    @property
    def is_dialogue(self) -> bool:
        """Several turns of conversation, or one long passage: a query whose words are mostly not what it seeks."""
        return self.turns >= 2 or (self.lines >= 3 and self.words > LONG_QUERY_WORDS // 2) or self.is_long

    @property
    def is_long(self) -> bool:
        return self.words > LONG_QUERY_WORDS

    def describe(self) -> str:
        """A short phrase for the planner's explanations."""
        if self.turns >= 2:
            return f"a dialogue excerpt of {self.turns} turns ({self.words} words)"
        if self.lines >= 3 or self.is_long:
            return f"a passage of {self.words} words"
        return f"a {'question' if self.is_question else 'query'} of {self.words} words"


def names_someone(text: str) -> bool:
    """Whether ``text`` has a capitalised word that does not open a sentence ("When did Maria move?", "the MRI"):
    it says who or what it is about. "I" and its contractions are no such word.
    """
    return any(
        m.group(0)[0].isupper()
        and not never_a_name(m.group(0).lower().replace("’", "'"))
        and not is_sentence_start(text, m.start())
        for m in _WORD_START.finditer(text)
    )


def unquoted(text: str) -> str | None:
    """The utterance inside ``text`` when all of it is one quotation (“...”, "...", '...'), else None."""
    text = text.strip()
    close = _QUOTES.get(text[:1])
    if close is None or len(text) < 3 or not text.endswith(close):
        return None
    inner = text[1:-1].strip()
    return inner if inner and close not in inner else None


def read_turn(line: str) -> tuple[str | None, str] | None:
    """A line read as a turn of dialogue: (its speaker label, or None for a quoted line without one; what was said,
    its quotes removed), or None when the line is no turn.
    """
    match = _TURN.match(line)
    if match is not None:
        speaker = next(match.group(g) for g in _LABEL_GROUPS if match.group(g) is not None)
        said = line[match.end() :].strip()
        return speaker, unquoted(said) or said
    inner = unquoted(line)
    return None if inner is None else (None, inner)


def query_shape(text: str) -> QueryShape:
    """Measure ``text``: words, lines, speaker turns, sentences, and whether its last line asks a question."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    read = [read_turn(line) for line in lines]
    turns = sum(1 for r in read if r is not None)
    last = lines[-1] if lines else ""
    last_is_turn = bool(read and read[-1] is not None and turns)
    said = [r[1] if r is not None else line for line, r in zip(lines, read, strict=True)]
    if last_is_turn:
        last = said[-1]
    sentences = sum(max(len(_SENTENCE_END.findall(line)), 1) for line in lines)
    return QueryShape(
        words=len(_WORD.findall(text)),
        lines=len(lines),
        turns=turns,
        sentences=sentences,
        is_question=last.rstrip().endswith("?"),
        last_turn=last,
        speakers=tuple(dict.fromkeys(r[0] for r in read if r is not None and r[0] is not None)),
        said="\n".join(said),
        last_is_turn=last_is_turn,
    )
