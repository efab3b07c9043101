"""A user's alias table: who "Mel", "my sister" and "your dog" are, learnt from the turns and read per speaker."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from memlane.enrich.cues import may_hold
from memlane.enrich.entities import (
    _ANIMALS,
    _CAP_WORD,
    _CONNECTOR_WORD,
    _KIN,
    _KIN_MENTION,
    _NOT_NAMES,
    _POSSESSIVE_KIN,
    KIN_CUES,
    AliasRow,
    EntityMention,
    _strip_honorific,
    canonical,
    extract_entities,
)
from memlane.enrich.temporal import candidate_spans

# "my therapist Dr. Okafor": an abbreviated title with its full stop belongs to the name after it
_TITLED: Final = r"(?:(?:Dr|Mr|Mrs|Ms|Mx|Prof|St)\.\s+)?"
_NAMED_KIN: Final = re.compile(
    rf"\b(?P<owner>[Mm]y|[Oo]ur)\s+(?:(?:little|big|older|younger|baby|best)\s+)?(?P<kin>{_KIN})"
    rf"(?:\s*,\s*|\s+(?:named|called)\s+|\s+is\s+(?:named|called)\s+|['’]s\s+name\s+is\s+|\s+)"
    rf"(?P<name>{_TITLED}{_CAP_WORD}(?:\s+{_CAP_WORD})?)"
)
_A_KIN_NAMED: Final = re.compile(
    rf"\b(?P<owner>[Aa]n?|[Tt]he)\s+(?:new\s+|little\s+|baby\s+)?(?P<kin>{_KIN})\s+(?:named|called)\s+"
    rf"(?P<name>{_TITLED}{_CAP_WORD}(?:\s+{_CAP_WORD})?)"
)
_NAME_THEN_KIN: Final = re.compile(
    rf"(?P<name>{_TITLED}{_CAP_WORD}(?:\s+{_CAP_WORD})?)\s*(?:,|\(|-|–)\s*(?P<owner>[Mm]y|[Oo]ur)\s+"
    rf"(?:(?:little|big|older|younger|baby|best)\s+)?(?P<kin>{_KIN})\b"
)


_YOUR_NAMED_KIN: Final = re.compile(
    rf"\b(?P<owner>[Yy]our)\s+(?:(?:little|big|older|younger|baby|best)\s+)?(?P<kin>{_KIN})"
    rf"(?:\s*,\s*|\s+(?:named|called)\s+|\s+)(?P<name>{_CAP_WORD})"
)
_RELATIONAL: Final = re.compile(
    rf"(?P<owner>my|our|your|his|her|their|the user)\s+(?:(?:little|big|older|younger|baby|best)\s+)?(?P<kin>{_KIN})"
    r"|(?P<the>the)\s+(?P<children>kids|children)"
)
# After "NAME, my KIN": "'s" (is, has) or "'ll", "'d" make the kin a sentence's subject ("Thankfully, my son's ok")
_KIN_IS: Final = re.compile(r"['’](?:s|ll|d|re|ve)\b")


def _overlaps(span: tuple[int, int], others: Sequence[tuple[int, int]]) -> bool:
    return any(start < span[1] and span[0] < end for start, end in others)


#: The alias-table prefix of the user's own relations ("my sister"), whoever speaks of them.
USER: Final = "my"


@dataclass(frozen=True)
class Relation:
    """A relational mention read from someone's perspective: ``owner`` (a possessive word) and ``kin``."""

    owner: str
    kin: str


def relation_of(mention: str) -> Relation | None:
    """The owner and kin of a relational mention ("my sister", "your dog", "the user's boss"), else None."""
    match = _RELATIONAL.fullmatch(canonical(mention))
    if match is None:
        return None
    if match.group("the"):  # "the kids": the speaker's
        return Relation("our", canonical(match.group("children")))
    return Relation(match.group("owner"), canonical(match.group("kin")))


class _Either(Collection[str]):
    """Membership in either of two key views, without building their union for every turn."""

    def __init__(self, a: Collection[str], b: Collection[str]) -> None:
        self._a, self._b = a, b

    def __contains__(self, item: object) -> bool:
        return item in self._a or item in self._b

    def __iter__(self) -> Iterator[str]:
        yield from self._a
        yield from (k for k in self._b if k not in self._a)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class EntityResolver:
    """A per-user alias table, learnt from the turns it observes, held in memory.

    It learns ``speaker's kin -> name`` from "my sister Anna", "my dog named Pepper" and "Anna, my sister";
    ``first name -> full name`` once a full name was seen (and forgets it when two full names share it). Persist
    it with ``to_rows()`` / ``from_rows()``.
    """

    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}
        self._kinds: dict[str, str] = {}
        self._display: dict[str, str] = {}
        self._ambiguous: set[str] = set()
        self._dropped: set[str] = set()  # first names found ambiguous since it was built: their rows must go
        self._taught: list[str] = []  # aliases set or confirmed since ``take_taught`` was last called
        self._persons: list[str] | None = None  # sorted person names, for short-form look-ups; None when stale

    def _sorted_persons(self) -> list[str]:
        if self._persons is None:
            self._persons = sorted(name for name, kind in self._kinds.items() if kind == "person")
        return self._persons

    def _set_kind(self, key: str, kind: str) -> None:
        """Record ``key``'s kind, keeping the sorted person names in step (one insertion or removal, not a re-sort:
        a scope of documents meets new capitalised names on every add).
        """
        was_person = self._kinds.get(key) == "person"
        self._kinds[key] = kind
        if self._persons is not None and was_person != (kind == "person"):
            if kind == "person":
                bisect.insort(self._persons, key)
            else:
                del self._persons[bisect.bisect_left(self._persons, key)]

    def _drop_kind(self, key: str) -> None:
        if self._kinds.pop(key) == "person" and self._persons is not None:
            del self._persons[bisect.bisect_left(self._persons, key)]

    def __len__(self) -> int:
        return len(self._kinds)

    def knows(self, key: str) -> bool:
        """Whether the canonical ``key`` is a known entity or alias."""
        return key in self._kinds or key in self._aliases

    @property
    def names(self) -> list[str]:
        """Canonical names of the entities known so far."""
        return sorted(self._kinds)

    def _add_entity(self, display: str, kind: str) -> str:
        key = _strip_honorific(canonical(display))
        if not key:
            return key
        if key in self._aliases:  # a known alias, e.g. a first name already tied to a full name
            return self._aliases[key]
        if key not in self._kinds or (self._kinds[key] == "other" and kind != "other"):
            self._set_kind(key, kind)
        if len(display) >= len(self._display.get(key, "")):
            self._display[key] = display.strip()
        words = key.split()
        # a first name of a full name: not "the" of "The Witcher", "of" of "Of the Rings", "last" of "Last Fri",
        # nor an acronym ("LGBTQ" of "LGBTQ Activists")
        first = display.split(maxsplit=1)[0] if display.strip() else ""
        if (
            kind == "person"
            and len(words) in (2, 3)
            and words[0] not in _NOT_NAMES
            and not _CONNECTOR_WORD.fullmatch(words[0])
            and not (len(first) > 1 and first.isupper())
        ):
            self._learn_first_name(words[0], key)
        return key

    def _learn_first_name(self, first: str, full: str) -> None:
        if first in self._ambiguous:
            return
        current = self._aliases.get(first)
        if current is not None and current != full:
            del self._aliases[first]
            self._ambiguous.add(first)
            self._dropped.add(first)
            return
        self._aliases[first] = full
        self._taught.append(first)
        if first in self._kinds:  # the first name seen alone so far was this person all along
            self._drop_kind(first)
            self._display.pop(first, None)
            for alias, target in self._aliases.items():
                if target == first:
                    self._aliases[alias] = full

    def _add_alias(self, alias: str, target: str) -> None:
        alias = canonical(alias)
        if alias and target and alias != target:
            self._aliases[alias] = target
            self._taught.append(alias)

    def take_taught(self) -> list[str]:
        """The aliases the turns observed since the last call set or confirmed ("my sister" -> Anna, a first name
        -> its full name): what those turns are the sources of. Emptied by the call.
        """
        taught = list(dict.fromkeys(self._taught))
        self._taught.clear()
        return taught

    def held(self, taught: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        """``taught`` (aliases by memory id) less the aliases this table no longer holds: a first name taught
        and then found ambiguous in the same write has no row for the memory to be the source of.
        """
        out = {mid: [a for a in aliases if a in self._aliases] for mid, aliases in taught.items()}
        return {mid: aliases for mid, aliases in out.items() if aliases}

    def observe(
        self,
        text: str,
        speaker: str | None = None,
        role: str | None = None,
        *,
        time_spans: Sequence[tuple[int, int]] | None = None,
    ) -> list[EntityMention]:
        """Learn the entities and aliases of one turn; returns the turn's mentions.

        "my sister Anna" is the speaker's sister (the user's when the speaker is unnamed); an unnamed assistant's
        "my" is its own and teaches nothing, but its "your sister Anna" is the user's sister.
        """
        mentions = extract_entities(
            text, speaker, known=_Either(self._kinds.keys(), self._aliases.keys()), time_spans=time_spans
        )
        for mention in mentions:
            relational = _KIN_MENTION.fullmatch(mention.text) or _POSSESSIVE_KIN.fullmatch(mention.text)
            if mention.kind not in ("date", "quantity") and not relational:
                self._add_entity(mention.text, mention.kind)
        owner = canonical(speaker) if speaker else ""
        assistant = role == "assistant" and not speaker
        names_kin = may_hold(text, KIN_CUES)  # each pattern below holds a kin term
        patterns = [] if assistant or not names_kin else [_NAMED_KIN, _A_KIN_NAMED, _NAME_THEN_KIN]
        dates = (time_spans if time_spans is not None else candidate_spans(text)) if patterns else ()
        for pattern in patterns:
            for match in pattern.finditer(text):
                name = match.group("name")
                if canonical(name) in _NOT_NAMES or _overlaps(match.span("name"), dates):
                    continue  # "Last Tuesday, my gf, ..." names a day
                if pattern is _NAME_THEN_KIN and _KIN_IS.match(text, match.end()):
                    continue  # "Thankfully, my son's ok": the kin is the subject, not in apposition
                kin = canonical(match.group("kin"))
                target = self._add_entity(name, "other" if kin in _ANIMALS else "person")
                self._add_alias(f"{owner} {kin}" if owner else f"{USER} {kin}", target)
        if names_kin and (assistant or not speaker):
            for match in _YOUR_NAMED_KIN.finditer(text):  # said to the user: the user's relation
                name = match.group("name")
                kin = canonical(match.group("kin"))
                if canonical(name) in _NOT_NAMES or self._user_relation(kin) is not None:
                    continue
                target = self._add_entity(name, "other" if kin in _ANIMALS else "person")
                self._add_alias(f"{USER} {kin}", target)
        return mentions

    def _follow(self, key: str) -> str:
        for _ in range(4):  # follow alias chains, bounded against cycles
            target = self._aliases.get(key)
            if target is None or target == key:
                break
            key = target
        return key

    def _owners_of(self, kin: str, exclude: str = "") -> set[str]:
        """The distinct entities that someone's ``kin`` is known to be (the user's or a named person's)."""
        suffix = f" {kin}"
        found: set[str] = set()
        for alias in self._aliases:
            if not alias.endswith(suffix):
                continue
            owner = alias[: -len(suffix)]
            if owner != exclude and (owner == USER or self._kinds.get(owner) == "person"):
                found.add(self._follow(alias))
        return found

    def _user_relation(self, kin: str) -> str | None:
        """Who the user's ``kin`` is: the user's own alias, else the one such relation anyone has."""
        if f"{USER} {kin}" in self._aliases:
            return self._follow(f"{USER} {kin}")
        found = self._owners_of(kin)
        return found.pop() if len(found) == 1 else None

    def resolve_relation(
        self, relation: Relation, speaker: str | None = None, role: str | None = None, about: str | None = None
    ) -> tuple[str | None, str]:
        """Who a relational mention names, from the perspective of whoever says it, and the key it is kept under.

        Returns ``(entity, key)``: ``entity`` is the canonical name it resolves to (None when unknown), ``key``
        the perspective-free form to keep when it does not resolve ("caroline sister" for Caroline's "my
        sister", "my sister" for the user's, whether the user says "my sister" or the assistant "your sister").
        ``about`` is the one person a turn names, whom "his/her/their" refers to.
        """
        owner, kin = relation.owner, relation.kin
        if owner in ("my", "our"):
            if role == "assistant" and not speaker:
                return None, f"{owner} {kin}"  # the assistant's own
            if speaker:
                key = f"{canonical(speaker)} {kin}"
                return (self._follow(key) if key in self._aliases else None), key
            return self._user_relation(kin), f"{USER} {kin}"
        if owner in ("your", "the user"):
            if speaker and role != "assistant":  # one named person to another
                found = self._owners_of(kin, exclude=canonical(speaker))
                return (found.pop() if len(found) == 1 else None), f"{owner} {kin}"
            return self._user_relation(kin), f"{USER} {kin}"
        if about:
            key = f"{canonical(about)} {kin}"
            return (self._follow(key) if key in self._aliases else None), key
        return None, f"{owner} {kin}"

    def resolve(
        self, mention_text: str, speaker: str | None = None, role: str | None = None, about: str | None = None
    ) -> str:
        """The canonical name a mention refers to; the mention's own canonical form when nothing better is known.

        Relational mentions ("my sister", "your dog") resolve from the perspective of who says them
        (``resolve_relation``); "Caroline's sister" works without a speaker; a first name resolves to the full
        name; a unique prefix of at least three letters of one known first name ("Mel") resolves to that person.
        """
        relation = relation_of(mention_text)
        if relation is not None:
            entity, key = self.resolve_relation(relation, speaker, role, about)
            return entity or key
        key = _strip_honorific(canonical(mention_text))
        if not key:
            return key
        key = self._follow(key)
        if len(key.split()) != 1 or len(key) < 3 or self._kinds.get(key, "person") != "person":
            return key
        # a short form of exactly one known person's first name ("Mel" for Melanie)
        persons = self._sorted_persons()  # names starting with ``key`` form one run of the sorted list
        start = bisect.bisect_left(persons, key)
        longer: list[str] = []
        for name in itertools.islice(persons, start, None):
            if not name.startswith(key) or len(longer) > 1:
                break
            if name != key:
                longer.append(name)
        return longer[0] if len(longer) == 1 else key

    def resolve_all(
        self, mentions: Iterable[EntityMention], speaker: str | None = None, role: str | None = None
    ) -> list[str]:
        """Distinct canonical names of the person, place, organisation, product and other mentions, in order.

        "his/her/their sister" is taken to be the sister of the one person the mentions name besides the speaker.
        """
        mentions = [m for m in mentions if m.kind not in ("date", "quantity")]
        me = canonical(speaker) if speaker else ""
        people = {
            canonical(m.text)
            for m in mentions
            if m.kind == "person" and relation_of(m.text) is None and _POSSESSIVE_KIN.fullmatch(m.text) is None
        } - {me, ""}
        about = people.pop() if len(people) == 1 else None
        out: dict[str, None] = {}
        for mention in mentions:
            name = self.resolve(mention.text, speaker, role, about)
            if name:
                out.setdefault(name, None)
            relation = relation_of(mention.text)
            if (
                relation
                and relation.owner in ("my", "our")
                and role == "user"
                and name != f"{USER} {relation.kin}"
                and self.resolve_relation(relation, speaker, role)[0] is None
            ):
                out.setdefault(f"{USER} {relation.kin}", None)  # a named user's unnamed sister is the user's
        return list(out)

    def to_rows(self) -> list[AliasRow]:
        """The table: one row per entity (alias == target) and one per alias."""
        rows = [AliasRow(key, key, kind, self._display.get(key, key)) for key, kind in sorted(self._kinds.items())]
        for alias in sorted(self._aliases):
            target = self.resolve(alias)
            if alias != target and alias not in self._kinds:
                rows.append(
                    AliasRow(alias, target, self._kinds.get(target, "other"), self._display.get(target, target))
                )
        return rows

    def changes(self, before: Iterable[AliasRow]) -> list[AliasRow]:
        """The rows to write so that a table read as ``before`` becomes this one: new or changed rows, and a removal
        for each first name this resolver found ambiguous that ``before`` still ties to one full name.
        """
        before = set(before)
        rows = [row for row in self.to_rows() if row not in before]
        held = {row.alias for row in before if row.alias != row.target}
        rows += [AliasRow.removal(a) for a in sorted(self._dropped) if a in held and a not in self._aliases]
        return rows

    @classmethod
    def from_rows(cls, rows: Iterable[AliasRow]) -> EntityResolver:
        """Rebuild a resolver from rows written by ``to_rows`` (and removals from ``changes``, applied in order).

        A first name that two known full names share and that no row ties to one of them is ambiguous: it is not
        learnt again when one of them is named (the table forgets it when the second one is first seen).
        """
        resolver = cls()
        for row in rows:
            if row.removes:
                resolver._aliases.pop(row.alias, None)
            elif row.alias == row.target:
                resolver._kinds[row.target] = row.kind
                resolver._persons = None
                resolver._display[row.target] = row.display
            else:
                resolver._aliases[row.alias] = row.target
        firsts: dict[str, int] = {}
        for name, kind in resolver._kinds.items():
            words = name.split()
            if kind == "person" and len(words) in (2, 3):
                firsts[words[0]] = firsts.get(words[0], 0) + 1
        resolver._ambiguous = {f for f, n in firsts.items() if n > 1 and f not in resolver._aliases}
        return resolver
