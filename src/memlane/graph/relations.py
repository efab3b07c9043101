"""Reading typed relations between entities from turns (offline rules) and from extracted claims."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from memlane.enrich.aliases import _A_KIN_NAMED, _NAME_THEN_KIN, _NAMED_KIN, USER, EntityResolver
from memlane.enrich.entities import _ANIMALS, _HONORIFICS, _KIN, _NOT_NAMES, AliasRow, canonical
from memlane.extraction.rules.base import HYPOTHETICAL
from memlane.graph.types import RelationClaim
from memlane.models import MemoryItem, MemoryKind
from memlane.store.base import EntityIndex

#: The node of the user when the user's turns carry no name.
USER_NODE: Final = "user"

_CHILDREN: Final = frozenset({"son", "daughter", "kid", "kids", "child", "baby", "children"})
_PARENTS: Final = frozenset({"mom", "mum", "mother", "dad", "father", "parents", "mommy", "daddy"})
_SPOUSES: Final = frozenset({"wife", "husband"})
_PARTNERS: Final = frozenset(
    {"partner", "boyfriend", "girlfriend", "bf", "gf", "fiance", "fiancee", "fiancé", "fiancée"}
)

_SUBJECT = (
    rf"(?P<subj>\b(?:[Ii]|[Ww]e|[Mm]y\s+(?:(?:little|big|older|younger|baby|best)\s+)?(?:{_KIN})|"
    r"[A-Z][a-z][\w'’-]*(?:\s+[A-Z][a-z][\w'’-]*){0,2}))"
)
_ADVERB = r"(?:\s+(?:really|just|recently|finally|also|still|absolutely|totally|now|both|all))*"
_NAME = r"(?P<obj>(?:the\s+)?[A-Z][\w'’&.-]*(?:\s+(?:of\s+|&\s+)?(?!I\b|I['’])[A-Z][\w'’&.-]*){0,4})"
_WORKS: Final = re.compile(
    rf"{_SUBJECT}{_ADVERB}\s+(?:work(?:s|ed)?|(?:am|is|are|was|'m|'s)\s+working|started\s+working|got\s+a\s+job|"
    rf"(?:have|has)\s+a\s+job|interns?|(?:am|is|was|'m)\s+interning)\s+(?:at|for)\s+{_NAME}"
)
_LIVES: Final = re.compile(
    rf"{_SUBJECT}{_ADVERB}\s+(?:live(?:s|d)?|(?:am|is|are|was|were|'m|'s|'re)\s+living|moved|(?:have|has)\s+moved|"
    rf"relocated)\s+(?:in|to)\s+{_NAME}"
)
_LIKES: Final = re.compile(
    rf"{_SUBJECT}(?:{_ADVERB}\s+(?:love|loves|loved|like|likes|liked|enjoy|enjoys|enjoyed|adore|adores)|"
    rf"(?:\s+(?:am|is|are)|['’](?:m|s|re)){_ADVERB}\s+(?:into|passionate about|obsessed with|a big fan of|a fan of))"
    r"\s+(?P<obj>[a-z][^,;.!?]{1,60})",
)
# What each pattern cannot match without (the patterns take no flags, so their words match as written): a kin
# pattern holds "my"/"our" before a kin term ("my sister", "Anna, my sister") or "named"/"called" ("a dog named
# Rex"); the others their verbs. A sentence with none of a pattern's cues is not scanned with it.
_OWNED_KIN: Final = re.compile(rf"(?:[Mm]y|[Oo]ur)\s+(?:(?:little|big|older|younger|baby|best)\s+)?(?:{_KIN})")
# Sentences end at . ! ? or a line break, but not at an abbreviated title ("My therapist Dr. Okafor is great.")
_SENTENCES: Final = re.compile(
    r"(?<=[.!?])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bMx\.)(?<!\bSt\.)(?<!\bProf\.)\s+|\n+"
)
_NEGATED: Final = re.compile(r"\b(?:not|n't|never|no longer|any ?more)\b", re.I)
_OBJECT_CUT: Final = re.compile(
    r"\s+(?:with|at|in|on|when|because|since|so|but|and|or|to|for|from|every|during|after|before|while|if|as|"
    r"that|which|who|too|very|lately|these|this|now|again|together|together|a lot|so much)\b.*$",
    re.I,
)
_LEADING: Final = re.compile(r"^(?:the|a|an|my|our|his|her|their|your|some|all|any|to|doing|going)\s+", re.I)
_DEICTIC: Final = re.compile(
    r"^(?:it|that|this|these|those|you|him|her|them|me|us|everything|everyone|what|how|when|one|being|having)\b",
    re.I,
)


def kin_predicate(kin: str) -> tuple[str, bool]:
    """The predicate of a kin word and whether the named one is the subject ("sister" -> ("sister_of", True):
    Anna sister_of Caroline; "son" -> ("parent_of", False): Caroline parent_of Max).
    """
    kin = canonical(kin)
    if kin in _CHILDREN:
        return "parent_of", False
    if kin in _PARENTS:
        return "parent_of", True
    if kin in _SPOUSES:
        return "spouse_of", True
    if kin in _PARTNERS:
        return "partner_of", True
    if kin in _ANIMALS:
        return "owns", False
    return f"{kin.replace(' ', '_').replace('-', '_')}_of", True


def _kin_claim(owner: str, kin: str, name: str, source: MemoryItem) -> RelationClaim:
    predicate, named_first = kin_predicate(kin)
    named_type = "other" if canonical(kin) in _ANIMALS else "person"
    when = source.event_time or source.timestamp
    if named_first:
        return RelationClaim(name, predicate, owner, source.id, when, named_type, "person")
    return RelationClaim(owner, predicate, name, source.id, when, "person", named_type)


@dataclass(frozen=True, slots=True)
class _Cues:
    """Which patterns may match a text: those whose cue it holds (a pattern without its cue cannot match)."""

    kin: bool
    works: bool
    lives: bool
    likes: bool

    @classmethod
    def of(cls, text: str, within: _Cues | None = None) -> _Cues:
        """The cues of ``text``; of those ``within`` holds only (``text`` is part of a text with those cues)."""
        kin, works, lives, likes = (True,) * 4 if within is None else within
        return cls(
            kin
            and (
                "named" in text
                or "called" in text
                or (("my" in text or "My" in text or "our" in text or "Our" in text) and bool(_OWNED_KIN.search(text)))
            ),
            works and ("work" in text or "job" in text or "intern" in text),
            lives and ("live" in text or "living" in text or "moved" in text or "relocated" in text),
            likes
            and (
                "love" in text
                or "like" in text
                or "enjoy" in text
                or "adore" in text
                or "into" in text
                or "passionate about" in text
                or "obsessed with" in text
                or "fan of" in text
            ),
        )

    def __iter__(self) -> Iterator[bool]:
        return iter((self.kin, self.works, self.lives, self.likes))

    def __bool__(self) -> bool:
        return self.kin or self.works or self.lives or self.likes


class RelationReader:
    """Reads relations from one user's turns, resolving names through the user's alias table.

    Kinship and pets ("my sister Anna", "Anna, my sister", "a dog named Rex"), employment ("I work at Acme"),
    residence ("we moved to Denver") and likes ("my kids love the beach"). Negated and hypothetical sentences are
    left alone; "I" is the turn's speaker (the user when unnamed); an unnamed assistant's turns give nothing.
    """

    def __init__(self, resolver: EntityResolver) -> None:
        self._resolver = resolver

    def read(self, item: MemoryItem) -> list[RelationClaim]:
        if item.kind is not MemoryKind.MESSAGE or item.role in ("system", "tool"):
            return []
        if item.role == "assistant" and not item.speaker:
            return []
        whole = _Cues.of(item.text)
        if not whole:  # no sentence of it can state a relation
            return []
        me = canonical(item.speaker) if item.speaker else USER_NODE
        out: dict[tuple[str, str, str], RelationClaim] = {}
        for sentence in _SENTENCES.split(item.text):
            cues = whole if sentence == item.text else _Cues.of(sentence, whole)
            if not cues or sentence.rstrip().endswith("?") or HYPOTHETICAL.search(sentence):
                continue
            for claim in self._sentence(sentence, me, item, cues):
                if claim.subject and claim.object and claim.subject != claim.object:
                    out.setdefault((claim.subject, claim.predicate, claim.object), claim)
        return list(out.values())

    def _sentence(self, text: str, me: str, item: MemoryItem, cues: _Cues) -> Iterable[RelationClaim]:
        if cues.kin:
            for pattern in (_NAMED_KIN, _A_KIN_NAMED, _NAME_THEN_KIN):
                for m in pattern.finditer(text):
                    name = canonical(m.group("name"))
                    if not name or name in _NOT_NAMES or name in _HONORIFICS:  # "my therapist Dr. Okafor": "Dr"
                        continue
                    yield _kin_claim(me, m.group("kin"), self._resolver.resolve(name), item)
        if not (cues.works or cues.lives or cues.likes):
            return
        negated = _NEGATED.search(text) is not None
        if negated:
            return
        when = item.event_time or item.timestamp
        for pattern, predicate, obj_type, cued in (
            (_WORKS, "works_at", "organisation", cues.works),
            (_LIVES, "lives_in", "place", cues.lives),
        ):
            if not cued:
                continue
            for m in pattern.finditer(text):
                subject = self._subject(m.group("subj"), me, item)
                obj = canonical(re.sub(r"^the\s+", "", m.group("obj"), flags=re.I))
                if subject and obj and obj not in _NOT_NAMES:
                    yield RelationClaim(
                        subject, predicate, self._resolver.resolve(obj), item.id, when, "person", obj_type
                    )
        for m in _LIKES.finditer(text) if cues.likes else ():
            subject = self._subject(m.group("subj"), me, item)
            thing = _object_phrase(m.group("obj"))
            if subject and thing:
                kind = "activity" if thing.split()[0].endswith("ing") else "object"
                yield RelationClaim(subject, "likes", thing, item.id, when, "person", kind)

    def _subject(self, words: str, me: str, item: MemoryItem) -> str:
        low = words.lower()
        if low in ("i", "we"):
            return me
        if low.startswith(("my ", "my\t")):
            return self._resolver.resolve(words, item.speaker, item.role or "user")
        key = canonical(words)
        parts = key.split()
        # "My sister Anna Lee moved ...": the longest known name the run ends with ("anna lee", not "lee"), else its
        # last word ("Yesterday Anna moved ...")
        known = next((" ".join(parts[i:]) for i in range(len(parts)) if self._resolver.knows(" ".join(parts[i:]))), "")
        key = known or (parts[-1] if parts else "")
        return "" if key in _NOT_NAMES else self._resolver.resolve(key)


def _object_phrase(text: str) -> str:
    """The thing liked, as a short canonical phrase: "the beach with my kids" -> "beach"; "" when deictic."""
    text = _OBJECT_CUT.sub("", text.strip())
    while True:
        stripped = _LEADING.sub("", text)
        if stripped == text:
            break
        text = stripped
    if not text or _DEICTIC.match(text):
        return ""
    words = canonical(text).split()[:3]
    return " ".join(words)


def read_relations(items: Sequence[MemoryItem], resolver: EntityResolver) -> list[RelationClaim]:
    """The relations read from ``items`` (one user's new turns), oldest first."""
    reader = RelationReader(resolver)
    return [claim for item in items for claim in reader.read(item)]


def relations_by_user(
    items: Sequence[MemoryItem],
    aliases: Mapping[str, Sequence[AliasRow]],
    store: EntityIndex,
    tables: Mapping[str, Sequence[AliasRow]] | None = None,
) -> dict[str, list[RelationClaim]]:
    """Each user's relations read from new ``items``, with the alias table as stored plus the ``aliases`` rows
    the same write adds (enrichment has already learnt from the items). ``tables`` holds the stored tables
    enrichment has just read (a user's is read again only when it is not there).
    """
    by_user: dict[str, list[MemoryItem]] = {}
    for item in items:
        by_user.setdefault(item.user_id, []).append(item)
    out: dict[str, list[RelationClaim]] = {}
    for user_id, own in by_user.items():
        stored = tables.get(user_id) if tables is not None else None
        rows = [*(store.entity_aliases(user_id) if stored is None else stored), *aliases.get(user_id, ())]
        claims = read_relations(own, EntityResolver.from_rows(rows))
        if claims:
            out[user_id] = claims
    return out


# What an extracted claim's attribute names, as a relation ("residence" -> lives_in); kin words and "pet <name>"
# are read by ``kin_predicate``.
_ATTRIBUTES: Final[Mapping[str, tuple[str, str]]] = {
    **dict.fromkeys(
        ("residence", "home", "city", "lives in", "lives_in", "location", "hometown", "home town"),
        ("lives_in", "place"),
    ),
    **dict.fromkeys(
        ("employer", "workplace", "company", "works at", "works_at", "job at", "work"), ("works_at", "organisation")
    ),
    **dict.fromkeys(("likes", "favourite", "favorite", "hobby", "loves", "enjoys"), ("likes", "object")),
}
_KIN_WORD: Final = re.compile(rf"(?:{_KIN})")


def relations_from_claims(
    items: Sequence[MemoryItem], resolvers: Mapping[str, EntityResolver] | None = None
) -> dict[str, list[RelationClaim]]:
    """Relations stated by typed memories' structured claims (``subject``/``attribute``/``value`` metadata, as the
    offline rules and an LLM extractor give them), each with the typed memory as its source, by user; names are
    resolved through the user's alias table when ``resolvers`` holds it (the claim "Anna" is "anna lee").
    """
    out: dict[str, list[RelationClaim]] = {}
    for item in items:
        subject, attribute, value = (item.metadata.get(k) for k in ("subject", "attribute", "value"))
        if not (isinstance(subject, str) and isinstance(attribute, str) and isinstance(value, str)):
            continue
        owner, attr, named = canonical(subject), canonical(attribute), canonical(value)
        if owner in ("the user", ""):
            owner = USER_NODE
        resolver = resolvers.get(item.user_id) if resolvers is not None else None
        if resolver is not None:
            owner = owner if owner == USER_NODE else resolver.resolve(owner)
            named = resolver.resolve(named) if named else named
        if not owner or not named or owner == named:
            continue
        when = item.valid_from or item.event_time or item.timestamp
        first = attr.split()[0] if attr else ""
        if attr in _ATTRIBUTES:
            predicate, kind = _ATTRIBUTES[attr]
            claim = RelationClaim(owner, predicate, named, item.id, when, "person", kind)
        elif first == "pet" and len(attr.split()) > 1:  # "pet rex" = "dog": the owner owns rex
            claim = RelationClaim(owner, "owns", canonical(attr.split(maxsplit=1)[1]), item.id, when, "person", "other")
        elif _KIN_WORD.fullmatch(attr) or (first and _KIN_WORD.fullmatch(first)):
            claim = _kin_claim(owner, attr if _KIN_WORD.fullmatch(attr) else first, named, item)
        else:
            continue
        out.setdefault(item.user_id, []).append(claim)
    return out


__all__ = [
    "USER",
    "USER_NODE",
    "RelationReader",
    "kin_predicate",
    "read_relations",
    "relations_by_user",
    "relations_from_claims",
]
