"""Rules for the people and animals in a speaker's life, and for plans and past events."""

from __future__ import annotations

import re
from datetime import datetime

from memlane.enrich.entities import canonical
from memlane.extraction.rewrite import absolutise, finish_sentence
from memlane.extraction.rules.base import (
    LEADING_TIME,
    MONTHS_DAYS,
    PET_WORDS,
    PLACE,
    RELS,
    SINGLE_RELS,
    TRIVIAL_ACT,
    Clause,
    Draft,
    capitalised_names,
    make_draft,
    rx,
    standalone,
)
from memlane.extraction.rules.changes import states_age
from memlane.models import MemoryKind

# -- pets and people -------------------------------------------------------------------------------------------
_OWNS = rx(
    r"(?i:\b(?:i|we)(?P<perfect>'ve| have)? (?:just |recently |finally |also |now )?(?P<verb>got|have|adopted|bought|"
    r"rescued|own|found|brought home|took in|welcomed|fostered)\b)"
)
# "a border collie called Pepper", "two cats called Tom and Jerry"
_PET = rx(
    rf"(?i:\b(?P<animal>{PET_WORDS})(?P<plural>e?s)?(?:\s+(?!named|called)[a-z]+)?,?\s+(?:named|called|whose names? (?:is|are))\s+)"
    r"(?P<name>[A-Z][\w'-]+(?:(?:,\s*|,?\s+and\s+)[A-Z][\w'-]+)*)"
)
_AND = re.compile(r",\s*|,?\s+and\s+")
_MY_PET = rx(
    rf"(?i:\b(?:my|our) (?:(?:new|little|old|sweet|baby|senior|rescue|family) )?(?P<animal>{PET_WORDS}),? "
    r"(?:(?:named|called) )?)(?P<name>[A-Z][a-z][\w'-]*)\b"
)
_REL_NAMED = rx(rf"(?i:\bmy (?P<rel>{RELS})(?:'s| is)? (?:called|named) )(?P<name>[A-Z][\w'-]+)")
_REL_APPOSITIVE = rx(
    rf"(?i:\bmy (?:(?:new|little|older|younger|big|baby|oldest|youngest|eldest) )?(?P<rel>{RELS}),? )(?P<name>[A-Z][a-z][\w'-]*)\b,?(?P<rest>[^;.!?]*)"
)
_REL_STATEMENT = rx(
    rf"(?i:^my (?P<rel>{RELS}) (?P<rest>(?:is|was|works|lives|has|had|loves|likes|hates|just|got|moved|will|"
    r"started|'s)\b[^;.!?]*))"
)


def people(clause: Clause) -> list[Draft]:
    """Pets ("I got a puppy named Biscuit"), named relations ("my husband is called David", "my wife Elena") and statements about relatives."""
    text = clause.text
    out: list[Draft] = []
    owns = _OWNS.search(text)
    if owns:
        verb = owns.group("verb").lower()
        acquired = verb not in ("have", "own") and not (verb == "got" and owns.group("perfect"))
        _, when = absolutise(text, clause.reference, "past") if acquired else (text, None)
        for pm in _PET.finditer(text, owns.end()):
            animal = pm.group("animal").lower()
            names = _AND.split(pm.group("name")) if pm.group("plural") else [pm.group("name")]
            out.extend(_pet(clause, animal, name, when) for name in names if name.lower() not in MONTHS_DAYS)
    if not out and (m := _MY_PET.search(text)) and m.group("name").lower() not in MONTHS_DAYS:
        out.append(_pet(clause, m.group("animal").lower(), m.group("name"), None))
    if out:
        return out
    if m := _REL_NAMED.search(text):
        rel, name = m.group("rel").lower(), m.group("name")
        out.append(_relation(clause, "relation-named", rel, name, 0.85))
        return out
    if (m := _REL_APPOSITIVE.search(text)) and m.group("name").lower() not in MONTHS_DAYS:
        rel, name, rest = m.group("rel").lower(), m.group("name"), m.group("rest").strip()
        out.append(_relation(clause, "relation-appositive", rel, name, 0.75))
        if (
            rest
            and not states_age(text)
            and re.match(
                r"(?i)(?:is|was|works|lives|has|had|loves|likes|enjoys|hates|just|got|moved|turned|will|started|and|"
                r"[a-z]+(?<!ss)s|[a-z]{3,}ed)\b",
                rest,
            )
        ):
            out.append(_about_other(clause, f"my {rel} {name} {rest}", "relation-detail", [name]))
        return out
    if m := _REL_STATEMENT.search(text):
        out.append(_about_other(clause, m.group(0), "relation-statement", []))
    return out


def _pet(clause: Clause, animal: str, name: str, when: datetime | None) -> Draft:
    """An ``entity`` memory for a named pet: "Rex is Maya's dog."; its claim is ``pet <name> = <animal>``."""
    sentence = finish_sentence(f"{name} is {clause.subject}'s {animal}")
    return make_draft(
        clause,
        "pet",
        MemoryKind.ENTITY,
        sentence,
        0.85,
        0.6,
        event_time=when,
        attribute=f"pet {name.lower()}",
        value=animal,
        entities=[name],
    )


def _relation(clause: Clause, rule: str, rel: str, name: str, confidence: float) -> Draft:
    attribute = rel if rel in SINGLE_RELS else f"{rel} {name.lower()}"
    sentence = finish_sentence(f"{name} is {clause.subject}'s {rel}")
    return make_draft(
        clause, rule, MemoryKind.RELATION, sentence, confidence, 0.7, attribute=attribute, value=name, entities=[name]
    )


def _about_other(clause: Clause, span: str, rule: str, entities: list[str]) -> Draft:
    """A statement about someone the speaker names by relation: kind from its tense and verb."""
    future = bool(re.search(r"(?i)\b(?:will|going to|is \w+ing|are \w+ing)\b", span))
    sentence, when = standalone(clause, span, "future" if future else "past")
    if future and when is not None:
        kind = MemoryKind.PLAN
    elif re.search(r"(?i)\b(?:loves|likes|enjoys|hates)\b", span):
        kind = MemoryKind.PREFERENCE
    elif when is not None:
        kind = MemoryKind.EVENT
    else:
        kind = MemoryKind.FACT
    return make_draft(
        clause, rule, kind, sentence, 0.6, 0.5, event_time=when, entities=entities + capitalised_names(span)
    )


# -- people known by their role, and places of one's own ----------------------------------------------------------
_ROLE_PEOPLE = (
    r"doctor|gp|therapist|counsell?or|dentist|personal trainer|trainer|landlord|landlady|tutor|coach|mentor|vet|"
    r"lawyer|accountant|hairdresser|barber|physio|physiotherapist|teacher|piano teacher|manager"
)
_OWN_PLACES = (
    r"gym|school|university|college|church|pub|cafe|café|coffee shop|restaurant|bar|hometown|neighbou?rhood|"
    r"book club|running club|club|band|yoga studio|studio|choir"
)
_NAMED_THING = rx(
    rf"(?i:\bmy (?:(?:local|old|new|current|regular) )?(?P<what>{_ROLE_PEOPLE}|{_OWN_PLACES})"
    r"(?:,\s*|\s+is called\s+|\s+is named\s+|\s+called\s+|\s+named\s+|\s+is\s+|\s+))"
    r"(?P<name>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+|The\s+)?[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,3})"
)


def named_things(clause: Clause) -> list[Draft]:
    """``entity`` memories for people known by role and places of one's own: "My therapist Dr. Okafor",
    "my gym, Iron Temple", "My hometown is Galway"; the claim is ``<role or place> = <name>``.
    """
    if "favourite" in clause.fired:
        return []
    m = _NAMED_THING.search(clause.text)
    if m is None:
        return []
    what, name = m.group("what").lower(), m.group("name").rstrip(".")
    if name.split()[-1].lower() in MONTHS_DAYS or canonical(name) in ("i", "the"):
        return []
    person = re.fullmatch(_ROLE_PEOPLE, what) is not None
    return [
        make_draft(
            clause,
            "named-person" if person else "named-place",
            MemoryKind.ENTITY,
            finish_sentence(f"{name} is {clause.subject}'s {what}"),
            0.8,
            0.5,
            attribute=what,
            value=name,
            entities=[name],
        )
    ]


# -- plans and events ----------------------------------------------------------------------------------------------
_PLAN = rx(
    r"(?i:\b(?P<who>i(?:'m| am)|we(?:'re| are)) (?:(?:really |definitely |finally )?(?:going to|gonna|planning to|planning on|"
    r"hoping to|about to)|(?P<go>going|heading|flying|travell?ing|driving|moving) (?=to\b)) )(?P<act>[^;.!?]{3,120})"
)
_INTEND = rx(
    r"(?i:\b(?P<who>i|we) (?P<verb>plan|intend|hope|want|aim|'ve decided|have decided|decided) to )(?P<act>[^;.!?]{3,120})"
)
_WILL = rx(r"(?i:\b(?P<who>i|we)(?:'ll| will| shall) )(?P<act>[^;.!?]{3,120})")
_PROGRESSIVE = rx(
    r"(?i:\b(?P<who>i(?:'m| am)|we(?:'re| are)) (?:visiting|starting|flying|travell?ing|leaving|getting married|"
    r"hosting|attending|running|taking|having|moving)\b)(?P<act>[^;.!?]{0,120})"
)
_EVENT = rx(
    rf"(?i:^(?P<lead>{LEADING_TIME},? )?(?P<who>i|we) (?:just |recently |finally |also |officially )?(?:got engaged|got married|got divorced|"
    r"got promoted|got (?:a|my) (?:new )?(?:job|degree|license|licence|diploma)|graduated|started|finished|ran|visited|"
    r"went|bought|adopted|joined|quit|lost|won|met|booked|completed|passed|travell?ed|celebrated|retired|left|sold|"
    r"climbed|hiked|flew|launched|published|broke up|signed|opened|saw|played|baked|cooked|watched|attended|drove|swam|moved|finally|had (?:a|my|our) (?:baby|wedding|surgery|party))\b)"
)


def plans(clause: Clause) -> list[Draft]:
    """Intentions ("I'm going to", "I plan to", "I'll", "I'm visiting ... in May"); undated ones get 0.45, below the threshold."""
    text = clause.text
    for pattern, rule in ((_PLAN, "plan"), (_INTEND, "intend"), (_WILL, "will"), (_PROGRESSIVE, "progressive")):
        m = pattern.search(text)
        if not m:
            continue
        act = m.group("act").strip()
        if TRIVIAL_ACT.match(act) or re.match(r"(?i)not\b", act):
            return []
        sentence, when = standalone(clause, text[m.start() :], "future")
        if rule == "progressive" and when is None:
            return []  # "I'm running late" is no plan; "I'm visiting Rome in May" is
        moving = (m.groupdict().get("go") or "").lower() == "moving" or re.match(r"(?i)move to\b", act)
        confidence = 0.75 if when is not None else 0.45
        if (m.groupdict().get("verb") or "").lower() in ("want", "hope"):
            confidence -= 0.15
        if m.group("who").lower().startswith("we"):
            confidence -= 0.05
        place = re.search(r"\b(?:to|visit|visiting|in) " + PLACE, text[m.start() :])
        if place and place.group("v").split()[0].lower() in MONTHS_DAYS:
            place = None
        if moving:
            attribute, value = "planned move", place.group("v") if place else None
        elif place:
            attribute, value = f"plan {place.group('v').lower()}", "planned"
        else:
            attribute, value = None, None
        return [
            make_draft(
                clause,
                rule,
                MemoryKind.PLAN,
                sentence,
                confidence,
                0.6,
                event_time=when,
                attribute=attribute,
                value=value,
                entities=capitalised_names(text[m.start() :]),
            )
        ]
    return []


def events(clause: Clause) -> list[Draft]:
    """Past events told in the first person ("I graduated", "I got engaged"); undated ones get 0.45, below the threshold."""
    m = _EVENT.search(clause.text)
    if not m:
        return []
    span = clause.text[m.start() :]
    lead = m.group("lead")
    if lead:  # "Two weeks ago I ran ..." reads better as "... ran ... two weeks ago" once the date is absolute
        span = f"{clause.text[m.end('lead') :].rstrip(' .!')} {lead.strip(' ,')}"
    sentence, when = standalone(clause, span, "past")
    # an explicit time phrase opening the sentence marks a real event even when it stays relative ("last summer")
    confidence = 0.75 if when is not None or lead else 0.45
    return [
        make_draft(
            clause,
            "event",
            MemoryKind.EVENT,
            sentence,
            confidence,
            0.6,
            event_time=when,
            entities=capitalised_names(clause.text[m.end() :]),
        )
    ]
