"""What the read model holds of one memory (``HotRow``), and the helpers that enter rows and their postings."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Final

import numpy as np

from memlane.store.hot.tokens import tokens

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def from_micros(value: int) -> datetime:
    """A stored time (integer microseconds since the epoch) as an aware datetime."""
    return _EPOCH + timedelta(microseconds=value)


#: The entity links of a memory that has none (shared: most rows have none).
NO_ENTITIES: Final[Mapping[str, bool]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class HotRow:
    """What the read model holds of one memory (times in microseconds, as stored)."""

    pk: int
    id: str
    kind: str
    session_id: str | None
    position: int | None
    ts: int
    importance: float
    event_time: int | None
    event_end: int | None
    category: str | None
    intent: str | None
    current: bool
    body: str  # the indexed text (the speaker's name before a turn, a photo's caption after it)
    text: str  # the memory's own text: what the next turn indexes as its context
    entities: Mapping[str, bool] = field(default_factory=lambda: NO_ENTITIES)  # entity -> said by it
    label: tuple[str, str] = (
        "",
        "",
    )  # who says it (``turn_label``): a turn takes a previous turn of another as context


class Grow:
    """A numpy array with amortised appends (capacity doubles)."""

    def __init__(self, dtype: type, fill: float | int | bool) -> None:
        self.a: np.ndarray = np.full(64, fill, dtype=dtype)
        self.fill = fill

    def ensure(self, n: int) -> None:
        if n > len(self.a):
            bigger = np.full(max(n, 2 * len(self.a)), self.fill, dtype=self.a.dtype)
            bigger[: len(self.a)] = self.a
            self.a = bigger


def turn_label(role: object, speaker: object) -> tuple[str, str]:
    """Who says a turn: its role and its speaker (casefolded). A turn indexes its previous turn's words as its
    context only when the two differ in either (a reply; memlane.retrieval.scope_evidence reads the same evidence):
    documents or notes added together by one role, without a session, are no context of each other.
    """
    return ("" if role is None else str(role), "" if speaker is None else str(speaker).casefold())


def row_of_columns(r: Sequence[object], entities: Mapping[str, bool], label: tuple[str, str] = ("", "")) -> HotRow:
    """A row from a backend's selected columns, in ``HotRow``'s field order up to ``text``."""
    return HotRow(
        int(r[0]),  # type: ignore[call-overload]
        str(r[1]),
        str(r[2]),
        None if r[3] is None else str(r[3]),
        None if r[4] is None else int(r[4]),  # type: ignore[call-overload]
        int(r[5]),  # type: ignore[call-overload]
        float(r[6]),  # type: ignore[arg-type]
        None if r[7] is None else int(r[7]),  # type: ignore[call-overload]
        None if r[8] is None else int(r[8]),  # type: ignore[call-overload]
        None if r[9] is None else str(r[9]),
        None if r[10] is None else str(r[10]),
        bool(r[11]),
        str(r[12]),
        str(r[13]),
        entities,
        label,
    )


def without_text(row: HotRow) -> HotRow:
    """The row as the model keeps it (positional: ``dataclasses.replace`` costs five times as much)."""
    if not row.body and not row.text:
        return row
    return HotRow(
        row.pk,
        row.id,
        row.kind,
        row.session_id,
        row.position,
        row.ts,
        row.importance,
        row.event_time,
        row.event_end,
        row.category,
        row.intent,
        row.current,
        "",
        "",
        row.entities,
        row.label,
    )


#: A batch of at least this many rows is entered in bulk (``HotScope._add_many``).
BULK = 256


def terms_of(row: HotRow) -> tuple[list[str], list[str] | None]:
    """The terms of a row's indexed body, and of its text when it is a turn (the next turn's context). The body is
    usually the text with the speaker's name before it (or a caption after it): its text's terms are reused.
    """
    if row.kind != "message" or row.position is None:
        return tokens(row.body), None
    text = tokens(row.text)
    body = row.body
    if body == row.text:
        return text, text
    if row.text and body.endswith(row.text):
        head = body[: -len(row.text)]
        if not head or not (head[-1].isalnum() or row.text[0].isalnum()):
            return tokens(head) + text, text
    return tokens(body), text


def post_many(postings: dict[str, tuple[array[int], array[float]]], terms: list[str], slots: list[int]) -> None:
    """Append the term counts of many slots (``terms[i]`` occurs in ``slots[i]``; slots ascending) to ``postings``."""
    if not terms:
        return
    names = list(dict.fromkeys(terms))
    vocab = dict(zip(names, range(len(names)), strict=True))
    ids = np.fromiter(map(vocab.__getitem__, terms), dtype=np.int64, count=len(terms))
    slot_of = np.asarray(slots, dtype=np.int64)
    span = int(slot_of.max()) + 1
    pairs, counts = np.unique(ids * span + slot_of, return_counts=True)  # by term, then slot
    term_of, slot_col = np.divmod(pairs, span)
    cuts = np.flatnonzero(np.diff(term_of)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [len(pairs)]]).tolist(), strict=True):
        t = names[int(term_of[lo])]
        post = postings.get(t)
        if post is None:
            post = postings[t] = (array("q"), array("f"))
        post[0].frombytes(slot_col[lo:hi].astype(np.int64).tobytes())
        post[1].frombytes(counts[lo:hi].astype(np.float32).tobytes())


def post(postings: dict[str, tuple[array[int], array[float]]], slot: int, terms: list[str]) -> int:
    """Append ``slot``'s term counts to ``postings``; the number of terms."""
    counts: dict[str, int] = {}
    for t in terms:
        counts[t] = counts.get(t, 0) + 1
    for t, n in counts.items():
        post = postings.get(t)
        if post is None:
            post = postings[t] = (array("q"), array("f"))
        post[0].append(slot)
        post[1].append(float(n))
    return len(terms)
