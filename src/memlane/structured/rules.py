"""Rule-based translation of a question into a ``StructuredQuery`` (offline), or ``None`` when no rule claims it.

The rules read the question's shape (``how many times``, ``has ... ever``, ``when ... first/last``, ``... before
...``, ``what happened on ...``, ``which objects ...``) and fill typed fields: the user's known entities (from the
entity table), content words, and a time range resolved against ``now``. Nothing of the question's text becomes
query syntax: words are validated single words, names are canonical entity names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from memlane.enrich.entities import AliasRow, canonical
from memlane.enrich.temporal import TimeSpan, candidate_matches, query_time_range
from memlane.retrieval.text import STOPWORDS
from memlane.structured.query import Match, Op, StructuredQuery

_I = re.IGNORECASE
# "how often does/do ..." asks for a habit ("a few times a week"), which counting memories does not give.
_COUNT: Final = re.compile(
    r"^how\s+(?:many\s+times|(?:often|frequently)(?!\s+(?:does|do|is|are|would|will)\b))\s+(?P<rest>.+)$", _I
)
_BOTH: Final = re.compile(r"\bboth\b|\beach\s+other\b|\bin\s+common\b", _I)
_ORDER_YN: Final = re.compile(
    r"^(?:did|was|were|had|has|have)\s+(?P<a>.+?)\s+(?P<rel>before|after|earlier\s+than|later\s+than)\s+(?P<b>.+)$", _I
)
_ORDER_WHICH: Final = re.compile(
    r"^(?:which|what)\s+(?:came|happened|was\s+done|did\s+\S+\s+do)\s+first\W+(?P<a>.+?)\s+or\s+(?P<b>.+)$", _I
)
_FIRST_LAST: Final = re.compile(
    r"^(?:when|what\s+day|what\s+time|on\s+what\s+day)\s+(?:did|was|were|has|had|does)\s+(?P<rest>.+)$", _I
)
_FIRST_LAST_TIME: Final = re.compile(
    r"^when\s+(?:was|is)\s+the\s+(?P<which>first|last|latest|most\s+recent)\s+time\s+(?:that\s+)?(?P<rest>.+)$", _I
)
_FIRST_THING: Final = re.compile(
    r"^what\s+(?:was|is)\s+the\s+(?P<which>first|last)\s+thing\s+(?P<rest>.+)$|"
    r"^what\s+did\s+(?P<rest2>.+?)\s+do\s+(?P<which2>first|last)\b(?P<tail>.*)$",
    _I,
)
_LAST_PERIOD: Final = re.compile(
    r"\blast\s+(?:week|weekend|month|year|night|summer|winter|spring|autumn|fall|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|time\s+(?:we|you|i)\s+(?:talked|spoke))\b",
    _I,
)
_WHICH_LAST: Final = re.compile(r"\b(?:first|last|latest|most\s+recently?)\b", _I)
_RANGE: Final = re.compile(
    r"^what\s+(?:happened|went\s+on|was\s+going\s+on|did\s+(?P<subj>.+?)\s+do|was\s+(?P<subj2>.+?)\s+doing)\b", _I
)
_LIST: Final = re.compile(r"^(?:which|what|list\s+(?:the|all)?)\s*(?P<noun>[a-z]+)\s+(?P<rest>.+)$", _I)
_WHO: Final = re.compile(
    r"^who\s+(?!(?:is|was|are|were|has|have|had|does|do|did|would|could|will|can|should|might|may)\b)(?P<rest>.+)$", _I
)
_EXISTS: Final = re.compile(
    r"^(?:did|has|have|had|was\s+there|were\s+there|is\s+there|are\s+there)\s+(?P<rest>.+)$", _I
)
_MODAL: Final = re.compile(r"\b(?:would|could|might|likely|should|probably|think|considered?|why|how)\b", _I)
_BETWEEN: Final = re.compile(r"\bbetween\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)(?:\?|$)", _I)
_WORD: Final = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)

#: Nouns of a "which ..." question and the entity kind they list.
LIST_KINDS: Final = {
    "object": "object", "objects": "object", "thing": "object", "things": "object", "item": "object",
    "items": "object", "person": "person", "people": "person", "persons": "person", "place": "place",
    "places": "place", "room": "place", "rooms": "place", "animal": "animal", "animals": "animal", "pet": "animal",
    "pets": "animal", "food": "food", "foods": "food", "device": "device", "devices": "device",
    "appliance": "device", "appliances": "device", "cities": "place", "city": "place", "countries": "place",
    "organisations": "organisation", "organizations": "organisation", "companies": "organisation",
}  # fmt: skip
#: Words that name no content: question words, light verbs, frequency and order words.
_LIGHT: Final = frozenset(
    [
        "times",
        "time",
        "often",
        "frequently",
        "ever",
        "first",
        "last",
        "latest",
        "recent",
        "recently",
        "most",
        "anyone",
        "anybody",
        "someone",
        "somebody",
        "everyone",
        "happen",
        "happened",
        "happens",
        "go",
        "goes",
        "went",
        "gone",
        "going",
        "come",
        "came",
        "do",
        "does",
        "did",
        "done",
        "doing",
        "make",
        "made",
        "get",
        "got",
        "have",
        "has",
        "had",
        "take",
        "took",
        "taken",
        "one",
        "ones",
        "day",
        "days",
        "week",
        "weeks",
        "morning",
        "evening",
        "afternoon",
        "night",
        "mention",
        "mentioned",
        "mentions",
        "say",
        "said",
        "talk",
        "talked",
        "speak",
        "spoke",
        "tell",
        "told",
        "earlier",
        "later",
        "total",
        "number",
        "whole",
        "all",
    ]
)
#: Irregular past forms a stemmer does not join with their base.
_IRREGULAR: Final = {
    "ran": "run", "ate": "eat", "fed": "feed", "drank": "drink", "wrote": "write", "read": "read", "bought": "buy",
    "brought": "bring", "threw": "throw", "swam": "swim", "drove": "drive", "rode": "ride", "sang": "sing",
    "gave": "give", "left": "leave", "met": "meet", "saw": "see", "began": "begin", "broke": "break",
    "caught": "catch", "built": "build", "sent": "send", "spent": "spend", "taught": "teach", "won": "win",
    "lost": "lose", "fell": "fall", "found": "find", "flew": "fly", "grew": "grow", "hung": "hang", "kept": "keep",
    "knew": "know", "paid": "pay", "sold": "sell", "sat": "sit", "slept": "sleep", "stood": "stand", "wore": "wear",
    "washed": "wash", "cooked": "cook", "baked": "bake", "watered": "water",
}  # fmt: skip
_PRONOUNS: Final = frozenset(
    ["he", "she", "they", "i", "we", "you", "him", "her", "them", "it", "his", "their", "my", "our", "your"]
)


@dataclass(frozen=True)
class KnownEntity:
    """An entity of the user's table as the rules see it: canonical name and kind."""

    name: str
    kind: str


@dataclass(frozen=True)
class Vocabulary:
    """The user's entity names: each alias key (canonical form) and the entity it names."""

    aliases: dict[str, KnownEntity]

    @classmethod
    def from_rows(cls, rows: Iterable[AliasRow]) -> Vocabulary:
        rows = list(rows)
        kinds = {r.target: r.kind for r in rows if r.alias == r.target}
        out: dict[str, KnownEntity] = {}
        for r in rows:
            words = r.alias.split()
            if not words or len(words) > 3 or all(w in STOPWORDS or w in _LIGHT for w in words):
                continue  # a name must hold a content word ("the" is no name, whatever enrichment learned)
            if not r.alias.startswith(("my ", "your ", "the user")):
                out[r.alias] = KnownEntity(r.target, kinds.get(r.target, r.kind))
        return cls(out)

    def find(self, text: str) -> list[tuple[int, KnownEntity, str]]:
        """Known entities named in ``text``: (position in the canonical text, entity, alias key), in order."""
        padded = f" {canonical(text)} "
        found: list[tuple[int, KnownEntity, str]] = []
        for key, entity in self.aliases.items():
            at = padded.find(f" {key} ")
            if at >= 0:
                found.append((at, entity, key))
        found.sort(key=lambda f: (f[0], -len(f[2])))
        kept: list[tuple[int, KnownEntity, str]] = []
        for at, entity, key in found:  # a longer name wins over a name inside it
            if not any(a <= at < a + len(k) + 1 for a, _, k in kept):
                kept.append((at, entity, key))
        return kept


@dataclass(frozen=True)
class Translation:
    """A question's structured query and the rule that produced it."""

    query: StructuredQuery
    rule: str


def _strip(question: str) -> str:
    return " ".join(question.strip().rstrip("?.!").split())


def _time_words(text: str) -> set[str]:
    words: set[str] = set()
    for m in candidate_matches(text):
        words.update(w.casefold() for w in _WORD.findall(m.group(0)))
    return words


def _time_range(question: str, now: datetime) -> TimeSpan | None:
    between = _BETWEEN.search(question)
    if between:
        a = query_time_range(between.group("a"), now)
        b = query_time_range(
            between.group("b") + (f" {a.start.year}" if a and not re.search(r"\d{4}", between.group("b")) else ""), now
        )
        if a and b and a.start < b.end:
            return TimeSpan(a.start, max(a.end, b.end), between.group(0), "day")
    return query_time_range(question, now)


def _side(text: str, vocab: Vocabulary, inherit: str | None = None) -> tuple[Match, list[KnownEntity]] | None:
    """A clause as a ``Match``: its first person is the subject, other names are entities, the rest are words."""
    found = vocab.find(text)
    subject: str | None = None
    entities: list[str] = []
    name_words: set[str] = set()
    for _, entity, key in found:
        name_words.update(key.split())
        if subject is None and entity.kind == "person":
            subject = entity.name
        elif entity.name != subject and entity.name not in entities:
            entities.append(entity.name)
    skip = _time_words(text) | name_words
    groups: list[tuple[str, ...]] = []
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(text)]
    if subject is None and inherit is not None and any(w in _PRONOUNS for w in words[:3]):
        subject = inherit
    for word in words:
        word = word.removesuffix("'s")
        if word in STOPWORDS or word in _LIGHT or word in skip or word in _PRONOUNS or word.isdigit() or len(word) < 2:
            continue
        base = _IRREGULAR.get(word)
        group = (word, base) if base and base != word else (word,)
        if group not in groups:
            groups.append(group)
    if not groups and not entities and subject is None:
        return None
    return Match(subject=subject, entities=tuple(entities), terms=tuple(groups)), [f[1] for f in found]


def _within(match: Match, span: TimeSpan | None) -> Match:
    return match if span is None else replace(match, since=span.start, until=span.end)


def translate(question: str, vocab: Vocabulary, now: datetime) -> Translation | None:
    """The structured query a question asks, or ``None`` when it is not one the rules understand."""
    q = _strip(question)
    if not q or len(q) > 300 or _BOTH.search(q):  # what two people share is a join the rules do not write
        return None
    span = _time_range(q, now)

    m = _COUNT.match(q)
    if m:
        side = _side(m.group("rest"), vocab)
        if side is None or not side[0].terms:
            return None
        return Translation(StructuredQuery(Op.COUNT, _within(side[0], span)), "count: 'how many times / how often'")

    m = _ORDER_WHICH.match(q)
    if m:
        a, b = _side(m.group("a"), vocab), _side(m.group("b"), vocab)
        if a is None or b is None:
            return None
        labels = (m.group("a").strip(" ,"), m.group("b").strip(" ,"))
        query = StructuredQuery(Op.ORDER, _within(a[0], span), versus=_within(b[0], span), labels=labels)
        return Translation(query, "order: 'which happened first, A or B'")

    m = _ORDER_YN.match(q)
    if m and not _MODAL.search(q):
        a = _side(m.group("a"), vocab)
        b = _side(m.group("b"), vocab, inherit=a[0].subject if a else None)
        if a is None or b is None or not a[0].terms or not b[0].terms:
            return None
        first, second = (a[0], b[0]) if m.group("rel").lower() in ("before", "earlier than") else (b[0], a[0])
        query = StructuredQuery(Op.ORDER, _within(first, span), versus=_within(second, span))
        return Translation(query, f"order: 'did A {m.group('rel').lower()} B'")

    m = _FIRST_THING.match(q)
    if m:
        rest = m.group("rest") or m.group("rest2") or ""
        which = (m.group("which") or m.group("which2") or "").lower()
        side = _side(rest + (m.group("tail") or ""), vocab)
        if side is None:
            return None
        op = Op.FIRST if which == "first" else Op.LAST
        return Translation(StructuredQuery(op, _within(side[0], span)), f"{op.value}: 'what was the {which} thing'")

    m = _FIRST_LAST_TIME.match(q) or _FIRST_LAST.match(q)
    if m:
        rest = m.group("rest")
        which_m = _WHICH_LAST.search(m.group("which") if "which" in m.groupdict() and m.group("which") else rest)
        if which_m is not None and not _LAST_PERIOD.search(q):
            side = _side(rest, vocab)
            if side is None or not side[0].terms:
                return None
            op = Op.FIRST if which_m.group(0).lower() == "first" else Op.LAST
            return Translation(
                StructuredQuery(op, _within(side[0], span)), f"{op.value}: 'when ... {which_m.group(0)}'"
            )
        if _FIRST_LAST.match(q):
            return None

    m = _RANGE.match(q)
    if m and span is not None:
        subj = m.group("subj") or m.group("subj2")
        side = _side(subj, vocab) if subj else None
        rest = _side(q[m.end() :], vocab)
        if (side is not None and (side[0].terms or side[0].entities)) or (rest is not None and rest[0].terms):
            return None  # "what happened to John's job in May": a topic in a time range is a search, not a list
        match = Match(subject=side[0].subject) if side else Match()
        query = StructuredQuery(Op.RANGE, _within(match, span), limit=50)
        return Translation(query, "range: 'what happened on/between ...'")

    m = _LIST.match(q)
    if m and m.group("noun").lower() in LIST_KINDS:
        side = _side(m.group("rest"), vocab)
        if side is None:
            return None
        kind = LIST_KINDS[m.group("noun").lower()]
        query = StructuredQuery(Op.LIST, _within(side[0], span), entity_kind=kind)
        return Translation(query, f"list: 'which {m.group('noun').lower()} ...'")

    m = _WHO.match(q)
    if m:
        side = _side(m.group("rest"), vocab)
        if side is None or not side[0].terms:
            return None
        query = StructuredQuery(Op.LIST, _within(side[0], span), entity_kind="person")
        return Translation(query, "list: 'who <did something>'")

    m = _EXISTS.match(q)
    if m and not _MODAL.search(q):
        side = _side(m.group("rest"), vocab)
        if side is None or not side[0].terms:
            return None
        return Translation(StructuredQuery(Op.EXISTS, _within(side[0], span)), "exists: 'did/has ... (ever)'")
    return None
