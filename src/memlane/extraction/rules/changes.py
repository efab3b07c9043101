"""Rules for what changed: new jobs and quitting, giving things up, switching, cancelled plans, and ages.

Each proposes a claim (subject, attribute, value) that lines up with the claim of the earlier statement it
replaces, so that consolidation closes the old memory: "I got a new job at Northwind" states ``employer`` like
"I work at the bakery"; "I don't like coffee anymore" states ``preference coffee`` like "I love coffee".
"""

from __future__ import annotations

import re
from dataclasses import replace

from memlane.extraction.rewrite import finish_sentence, in_third_person, third_person
from memlane.extraction.rules.base import (
    ANIMALS,
    CUT,
    MONTHS_DAYS,
    OBJ,
    PLACE,
    RELS,
    Clause,
    Draft,
    capitalised_names,
    category_of,
    claim_key,
    gerund,
    make_draft,
    rx,
    standalone,
)
from memlane.models import MemoryKind

_ORG = r"(?P<v>[A-Z][\w'.&-]*(?:\s+(?:&\s+|of\s+|and\s+)?[A-Z][\w'.&-]*){0,4})"
_NO_MORE = r"(?:any ?more|any longer|these days|now)"

# -- work ----------------------------------------------------------------------------------------------------------
_NEW_JOB = rx(
    r"(?i:\bi (?:just |recently |finally |officially )?(?:got (?:a |an )?(?:new |great |dream )?(?:job|position|role)|"
    r"started (?:a |an )?(?:new )?(?:job|position|role)|started (?:working|work)|began working|(?:have |'ve )?"
    r"(?:just )?been hired|accepted (?:a |an )?(?:job|position|offer)) (?:at|with|for|by) )" + _ORG
)
_LEFT_JOB = rx(
    r"(?i:\bi (?:just |recently |finally )?(?:quit|left|resigned from|lost) (?:my|the) (?:old )?(?:job|position|role)"
    r"(?: (?:at|with) (?P<at>[^,;.!?]{2,50}?))?)" + CUT
)
_NO_LONGER_WORK = rx(
    r"(?i:\bi (?:no longer|don't|do not) work (?P<prep>at|for|in) (?P<at>[^,;.!?]{2,50}?))(?: any ?more| any longer)?"
    + CUT
)


def work(clause: Clause) -> list[Draft]:
    """A new employer ("I got a new job at Northwind", "I started working at X") or none ("I quit my job")."""
    text = clause.text
    if (m := _NEW_JOB.search(text)) and m.group("v").lower() not in MONTHS_DAYS:
        sentence, when = standalone(clause, text[m.start() :], "past")
        return [
            make_draft(
                clause,
                "new-job",
                MemoryKind.FACT,
                sentence,
                0.85,
                0.7,
                event_time=when,
                attribute="employer",
                value=m.group("v").rstrip("."),
                entities=[m.group("v").rstrip(".")],
            )
        ]
    for pattern, rule in ((_LEFT_JOB, "left-job"), (_NO_LONGER_WORK, "no-longer-works")):
        if m := pattern.search(text):
            if rule == "left-job":
                sentence, when = standalone(clause, text[m.start() :], "past")
            else:
                sentence, when = no_longer(clause, "work", f"{m.group('prep')} {m.group('at')}"), None
            at = m.group("at") or ""
            return [
                make_draft(
                    clause,
                    rule,
                    MemoryKind.FACT,
                    sentence,
                    0.8,
                    0.7,
                    event_time=when,
                    attribute="employer",
                    value="none",
                    entities=capitalised_names(at),
                )
            ]
    return []


# -- giving up, switching ------------------------------------------------------------------------------------------
_CONSUME = r"drink|eat|have|take|use|buy|smoke"
_STOP_CONSUMING = rx(
    rf"(?i:\bi (?:(?:don't|do not|no longer|never) (?P<verb>{_CONSUME})|(?:quit|stopped|gave up) "
    r"(?P<ing>drinking|eating|having|taking|using|buying)) )" + OBJ
)
_STOP_DOING = rx(
    r"(?i:\bi (?:(?:just |recently |finally )?(?:quit|stopped|gave up)|(?P<neg>no longer|don't|do not) "
    r"(?P<verb>play|do|practi[cs]e|go|run|swim|ride|climb|dance|sing|paint|cook|bake|surf|ski|knit|skate|hike|"
    r"cycle|bike|jog|teach|volunteer))\b\s*)(?P<act>[a-z][\w'-]*(?: [a-z][\w'-]*){0,2})?" + CUT
)
_DIETS = r"vegetarian|vegan|pescatarian|teetotal|sober|gluten[- ]free|keto|paleo"
_DIET_CHANGE = rx(rf"(?i:\bi(?:'m| am) (?:no longer|not) (?:a |an )?(?P<v>{_DIETS})\b)(?P<tail>[^,;.!?]*)")
_DIET_SINCE = rx(rf"(?i:\bi(?:'ve| have) been (?:a |an )?(?:strict )?(?P<v>{_DIETS})\b)")
_SWITCH = rx(
    r"(?i:\bi (?:just |recently |finally )?(?:switched|changed|moved over|went over)(?: from (?P<old>[^,;.!?]{2,40}?))?"
    r" to )" + OBJ
)
_NOW_USE = rx(
    r"(?i:\bi (?:only )?(?P<verb>drink|eat|use|take|ride|read|listen to) )(?P<obj>[^,;.!?]{2,60}?)"
    r"(?i: (?:now|these days|nowadays|instead))" + CUT
)


def giving_up(clause: Clause) -> list[Draft]:
    """Things given up or switched to: a preference or habit claim that replaces the earlier one.

    "I don't drink alcohol anymore" is ``preference alcohol = dislikes``; "I stopped playing tennis" is
    ``habit tennis = stopped``; "I'm no longer vegetarian" is ``diet = none``; "I switched to oat milk" is
    ``favourite milk = oat milk`` (or ``preference oat milk = likes`` for a thing of no known kind).
    """
    text = clause.text
    out: list[Draft] = []
    if (m := _DIET_CHANGE.search(text)) and (
        m.group(0).lower().startswith(("i'm no longer", "i am no longer"))
        or re.search(rf"\b{_NO_MORE}\b", m.group("tail"), re.IGNORECASE)
    ):
        sentence, _ = standalone(clause, text[m.start() : m.end()], "past")
        return [make_draft(clause, "diet-change", MemoryKind.FACT, sentence, 0.85, 0.8, attribute="diet", value="none")]
    if m := _DIET_SINCE.search(text):
        sentence, _ = standalone(clause, text[m.start() :], None)
        return [make_draft(clause, "diet", MemoryKind.FACT, sentence, 0.85, 0.8, attribute="diet", value=m.group("v"))]
    if m := _STOP_CONSUMING.search(text):
        obj = m.group("obj")
        negated = m.group("verb") is not None
        if not re.match(r"(?i)(?:it|that|this|them|any|much|a lot|time|fun|to)\b", obj) and (
            not negated or re.search(rf"(?i)\bno longer\b|\b{_NO_MORE}\b", text)
        ):
            verb = (m.group("verb") or "").lower()
            if negated:
                sentence, when = no_longer(clause, verb, claim_key(obj)), None
            else:
                sentence, when = standalone(clause, text[m.start() : m.end()], "past")
            return [
                make_draft(
                    clause,
                    "gave-up",
                    MemoryKind.PREFERENCE,
                    sentence,
                    0.8,
                    0.5,
                    event_time=when if not negated else None,
                    attribute=f"preference {claim_key(obj)}",
                    value="dislikes",
                    entities=capitalised_names(obj),
                )
            ]
    if (m := _STOP_DOING.search(text)) and m.group("act"):
        negated = m.group("neg") is not None
        act = m.group("act").strip().lower()
        if negated and not re.search(rf"(?i)\bno longer\b|\b{_NO_MORE}\b", text):
            return out
        act = _CHANGE_TAIL.sub("", act)
        if negated:
            verb = m.group("verb").lower()
            key = act if verb in ("play", "do", "practice", "practise") and act else gerund(verb)
        else:
            words = act.split()
            if words[0] in ("my", "the", "a", "an", "it", "that", "this", "to", "being", "talking", "laughing"):
                return out
            key = " ".join(words[1:]) if words[0] in ("playing", "doing", "practising", "practicing") else words[0]
        if not key or not key.replace(" ", "").isalpha():
            return out
        if negated:
            sentence, when = no_longer(clause, m.group("verb").lower(), act), None
        else:
            sentence, when = standalone(clause, _CHANGE_TAIL.sub("", text[m.start() :].rstrip(" .!")), "past")
        out.append(
            make_draft(
                clause,
                "stopped",
                MemoryKind.FACT,
                sentence,
                0.75,
                0.5,
                event_time=when,
                attribute=f"habit {key}",
                value="stopped",
            )
        )
        return out
    for pattern, rule in ((_SWITCH, "switched"), (_NOW_USE, "now-uses")):
        if m := pattern.search(text):
            obj = m.group("obj")
            if re.match(r"(?i)(?:it|that|this|them|a new|another|working|work)\b", obj):
                return out
            sentence, _ = standalone(clause, text[m.start() : m.end()], None)
            out.append(preference_claim(clause, rule, sentence, obj))
            return out
    return out


_CHANGE_TAIL = re.compile(r"\s+(?:any ?more|any longer|now|these days)$")


def no_longer(clause: Clause, verb: str, rest: str) -> str:
    """The sentence "<subject> no longer <verb>s <rest>." ("Maya no longer drinks alcohol.")."""
    return finish_sentence(in_third_person(f"{clause.subject} no longer {third_person(verb)} {rest}", clause.subject))


def preference_claim(clause: Clause, rule: str, sentence: str, obj: str, *, confidence: float = 0.75) -> Draft:
    """A liked thing's preference draft: ``favourite <kind>`` when its kind is known, else ``preference <thing>``."""
    key = claim_key(re.split(r"(?i)\s+(?:to|over|rather than|than)\s+", obj, maxsplit=1)[0])
    category = category_of(key)
    return make_draft(
        clause,
        rule,
        MemoryKind.PREFERENCE,
        sentence,
        confidence,
        0.5,
        attribute=f"favourite {category}" if category else f"preference {key}",
        value=key if category else "likes",
        entities=capitalised_names(obj),
    )


# -- cancelled plans -----------------------------------------------------------------------------------------------
_NOT_GOING = rx(
    r"(?i:\b(?:i(?:'m| am)|we(?:'re| are)) (?:not|no longer) (?:going|travell?ing|flying|moving|heading|driving) "
    r"(?:back )?to )" + PLACE
)
_WONT_GO = rx(r"(?i:\b(?:i|we) (?:won't|will not) be (?:going|travell?ing|flying|moving) to )" + PLACE)
_CANCELLED = rx(
    r"(?i:\b(?:i|we) (?:just |had to )?(?:cancell?ed|called off|postponed indefinitely) (?:my|our|the) "
    r"(?:\w+ )?(?:trip|visit|vacation|holiday|flight|move|journey|plans?) to )" + PLACE
)


def cancelled(clause: Clause) -> list[Draft]:
    """Plans called off ("I'm not going to Tokyo anymore", "I cancelled my trip to Peru"): ``plan <place> = cancelled``."""
    text = clause.text
    for pattern, rule in ((_NOT_GOING, "not-going"), (_WONT_GO, "wont-go"), (_CANCELLED, "cancelled")):
        m = pattern.search(text)
        if m is None:
            continue
        if rule == "not-going" and not re.search(rf"(?i)\bno longer\b|\b{_NO_MORE}\b|\bafter all\b", text):
            continue
        place = m.group("v").rstrip(".")
        sentence, _ = standalone(clause, text[m.start() :], None)
        return [
            make_draft(
                clause,
                rule,
                MemoryKind.PLAN,
                sentence,
                0.8,
                0.6,
                attribute=f"plan {place.lower()}",
                value="cancelled",
                entities=[place],
            )
        ]
    return []


# -- ages ----------------------------------------------------------------------------------------------------------
_MY_AGE = rx(
    r"(?i:^i(?:'m| am)(?: now)? (?P<n>\d{1,3})(?P<unit> years? old| yrs? old)?(?: now| this year| today)?\s*[.!]*$)"
)
_TURNED = rx(r"(?i:^i (?:just )?turned (?P<n>\d{1,3})\b)")
_THEIR_AGE = rx(
    rf"(?i:\bmy (?:(?:little|older|younger|big|baby|oldest|youngest|eldest|new) )?(?P<what>{RELS}|{ANIMALS}),? )"
    r"(?P<name>[A-Z][a-z][\w'-]*),?(?i: (?:is|turned|just turned|will be|turns) (?:now )?)(?P<n>\d{1,3})"
    r"(?P<unit> (?:years?|months?|weeks?) old)?(?=\s*(?:$|[,.;!?]|and\b|last\b|yesterday\b|today\b|this\b|on\b|in\b|"
    r"next\b|tomorrow\b|now\b))"
)


def ages(clause: Clause) -> list[Draft]:
    """Ages: the speaker's ("I'm 34", "I just turned 30") and a named relative's or pet's ("My dog Rex is 3")."""
    text = clause.text.strip()
    if m := _MY_AGE.search(text) or _TURNED.search(text):
        age = m.group("n")
        if not 1 <= int(age) <= 120:
            return []
        sentence = finish_sentence(f"{clause.subject} is {age} years old")
        return [make_draft(clause, "age", MemoryKind.FACT, sentence, 0.85, 0.6, attribute="age", value=age)]
    if (m := _THEIR_AGE.search(text)) and m.group("name").lower() not in MONTHS_DAYS:
        name, age = m.group("name"), m.group("n")
        unit = (m.group("unit") or "").strip()
        shown = f"{age} {unit}" if unit and not unit.startswith("year") else f"{age} years old"
        if unit.startswith(("month", "week")):
            age = f"{age} {unit.split()[0].rstrip('s')}s"
        draft = make_draft(
            clause,
            "their-age",
            MemoryKind.FACT,
            finish_sentence(f"{name} is {shown}"),
            0.8,
            0.5,
            attribute="age",
            value=age,
            entities=[name],
        )
        return [replace(draft, subject=name)]
    return []


def states_age(text: str) -> bool:
    """Whether ``text`` gives a named relative's or pet's age (the ``ages`` rule reads it, not the people rule)."""
    return _THEIR_AGE.search(text) is not None
