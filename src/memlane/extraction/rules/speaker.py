"""Rules for what speakers say about themselves: preferences, work, home, health, family, habits."""

from __future__ import annotations

from memlane.extraction.rewrite import finish_sentence
from memlane.extraction.rules.base import (
    CUT,
    DEICTIC,
    JOBS,
    LEADING_TIME,
    OBJ,
    PLACE,
    Clause,
    Draft,
    capitalised_names,
    claim_key,
    gerund,
    make_draft,
    rx,
    standalone,
)
from memlane.extraction.rules.changes import preference_claim
from memlane.models import MemoryKind

# -- preferences -------------------------------------------------------------------------------------------------
_FAVOURITE = rx(
    r"(?i:\bmy (?:all[- ]time )?(?:favou?rite|fave) )(?P<what>[\w ]{1,30}?)(?i: (?:is|are) )(?P<v>[^,;.!?]{1,60})"
)
_DISLIKE = rx(
    r"(?i:\bi (?:really |absolutely |totally |just )?(?:hate|dislike|detest|loathe|can't stand|cannot stand|"
    r"can not stand|don't like|do not like|don't enjoy|do not enjoy|am not a fan of|'m not a fan of) )" + OBJ
)
_LIKE = rx(
    r"(?i:\bi (?:really |absolutely |totally |also |just |truly )?(?P<verb>love|like|enjoy|adore|prefer) )" + OBJ
)
_FAN = rx(r"(?i:\bi(?:'m| am) (?:a )?(?:huge |big |massive |great |longtime |long-time )?fan of )" + OBJ)


def preferences(clause: Clause) -> list[Draft]:
    """Favourites, likes and dislikes, skipping deictic objects ("I love that")."""
    out: list[Draft] = []
    text = clause.text
    if m := _FAVOURITE.search(text):
        what, value = m.group("what").strip(), m.group("v").strip()
        sentence = finish_sentence(f"{clause.subject}'s favourite {what} is {value}")
        out.append(
            make_draft(
                clause,
                "favourite",
                MemoryKind.PREFERENCE,
                sentence,
                0.85,
                0.5,
                attribute=f"favourite {what.lower()}",
                value=value,
                entities=capitalised_names(value),
            )
        )
        return out
    if m := _DISLIKE.search(text):
        obj = m.group("obj")
        if not DEICTIC.match(obj):
            sentence, _ = standalone(clause, text[m.start() : m.end()], None)
            out.append(
                make_draft(
                    clause,
                    "dislike",
                    MemoryKind.PREFERENCE,
                    sentence,
                    0.75,
                    0.5,
                    attribute=f"preference {claim_key(obj)}",
                    value="dislikes",
                    entities=capitalised_names(obj),
                )
            )
        return out
    for pattern, rule, confidence in ((_FAN, "fan", 0.75), (_LIKE, "like", 0.75)):
        m = pattern.search(text)
        if not m:
            continue
        obj = m.group("obj")
        if DEICTIC.match(obj) or (
            m.groupdict().get("verb") == "like" and len(obj.split()) < 2 and obj.islower() and len(obj) < 4
        ):
            return out
        mild = m.groupdict().get("verb") == "like"
        sentence, _ = standalone(clause, text[m.start() : m.end()], None)
        if (m.groupdict().get("verb") or "").lower() == "prefer":
            out.append(preference_claim(clause, "prefer", sentence, obj))
            return out
        out.append(
            make_draft(
                clause,
                rule,
                MemoryKind.PREFERENCE,
                sentence,
                confidence - (0.05 if mild else 0.0),
                0.5,
                attribute=f"preference {claim_key(obj)}",
                value="likes",
                entities=capitalised_names(obj),
            )
        )
        return out
    return out


# -- facts about the speaker --------------------------------------------------------------------------------------
_WORK_AS = rx(r"(?i:\bi work as (?:an? )?)(?P<v>[^,;.!?]{2,60}?)" + CUT)
_TRAINING = rx(
    r"(?i:\bi(?:'m| am) (?:training|studying|working|learning) to (?:become|be) (?:an? )?)(?P<v>[^,;.!?]{2,60}?)" + CUT
)
_I_AM_JOB = rx(rf"(?i:\bi(?:'m| am) (?:an? |now an? )(?P<v>(?:[a-z-]+ ){{0,2}}(?:{JOBS}))s?\b)")
# "I work at Acme", and "I live in Boston and work at Acme" (the same "I" goes on)
_WORK_AT = rx(
    r"(?i:\b(?:i|i (?:live|am|'m|moved|grew up)\b[^,;.!?]{1,60}?\band(?: also| now| currently)?) "
    r"(?P<w>work|am working|'m working) (?:at|for|in) )(?P<v>[^,;.!?]{2,60}?)" + CUT
)
_STUDY = rx(
    r"(?i:\bi(?:'m| am) (?:studying|majoring in|doing (?:a|my) (?:degree|phd|masters?|master's|bachelor's) in) )"
    r"(?P<v>[^,;.!?]{2,60}?)" + CUT
)
# "I live in", "we now live in", "we're living in"; "I moved to", "we relocated from Boston to Denver", "I've moved back to"
_LIVE = rx(
    r"(?i:\b(?:(?:i|we) (?:currently |now |still |actually )?live|(?:i(?:'m| am)|we(?:'re| are)) (?:now |currently |still )?"
    r"living) in )" + PLACE
)
_MOVED = rx(
    r"(?i:\b(?:i|we)(?:'ve| have)? (?:just |recently |finally |officially |now |since |eventually )?(?:moved|relocated)"
    r"(?: back| over| out| away| house| home| all the way)? )(?:(?i:from )(?P<old>[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3}) )?"
    r"(?i:to )" + PLACE
)
_LEAD = rx(rf"(?i:^(?P<lead>{LEADING_TIME}),? )")
# "We moved to Postgres because the old database was slow" is no new home: moves in technical talk are left out
_TECHNICAL = rx(
    r"(?i:\b(?:server|database|db|framework|version|stack|repo(?:sitory)?|library|api|cluster|deploy\w*|migrat\w*|"
    r"codebase|backend|frontend|kubernetes|docker)s?\b)"
)
_FROM = rx(r"(?i:\bi(?:'m| am) (?:originally )?from )" + PLACE)
_ALLERGY = rx(r"(?i:\bi(?:'m| am) (?:very |severely |deathly )?allergic to )(?P<v>[^,;.!?]{2,40}?)" + CUT)
_DIET = rx(
    r"(?i:\bi(?:'m| am) (?:a |an )?(?:strict )?(?P<v>vegetarian|vegan|pescatarian|diabetic|lactose[- ]intolerant|"
    r"gluten[- ]free|celiac|coeliac|teetotal|sober)\b)"
)
_NAME = rx(r"(?i:\bmy name is |\bmy name's )(?P<v>[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)")
_BIRTHDAY = rx(r"(?i:\bmy birthday is (?:on )?)(?P<v>[^,;.!?]{3,30}?)" + CUT)
_HAVE_COUNT = rx(
    r"(?i:^i have (?P<n>a|an|one|two|three|four|five|six|\d+) (?P<v>kids?|children|sons?|daughters?|brothers?|"
    r"sisters?|siblings?|grandchildren|grandkids)\b)"
)
_HAVE_NONE = rx(r"(?i:^i (?:don't|do not) have (?:any )?(?P<v>siblings|brothers|sisters|kids|children|pets)\b)")
_USED_TO = rx(r"(?i:^i used to )(?P<v>[^,;.!?]{3,80}?)" + CUT)
_HABIT = rx(
    r"(?i:^i (?:usually |always |often |regularly )?(?P<verb>play|go|swim|run|cook|practi[cs]e|volunteer|teach|sing|"
    r"dance|read|walk|train|meditate|paint|bake|cycle|bike|hike|surf|ski|knit|garden|do yoga|work out|attend)\b"
    r"(?P<what>[^,;.!?]*?)\b(?:every|each|twice a|once a|three times a|daily|weekly|on (?:weekends|\w+days))\b"
    r"[^,;.!?]*)"
)


def facts(clause: Clause) -> list[Draft]:
    """Work, studies, home and origin, health and diet, name, birthday, family size, former and regular activities."""
    text, out = clause.text, []
    for pattern, rule, attribute, confidence in (
        (_WORK_AS, "work-as", "occupation", 0.85),
        (_TRAINING, "training", "occupation goal", 0.85),
        (_I_AM_JOB, "i-am-job", "occupation", 0.8),
        (_WORK_AT, "work-at", "employer", 0.8),
        (_STUDY, "study", "studies", 0.8),
    ):
        if m := pattern.search(text):
            # "I live in Boston and work at Acme" gives "I work at Acme"
            span = f"I {text[m.start('w') : m.end()]}" if "w" in m.groupdict() else text[m.start() : m.end()]
            sentence, _ = standalone(clause, span, None)
            out.append(
                make_draft(
                    clause,
                    rule,
                    MemoryKind.FACT,
                    sentence,
                    confidence,
                    0.7,
                    attribute=attribute,
                    value=m.group("v"),
                    entities=capitalised_names(m.group("v")),
                )
            )
            break
    technical = _TECHNICAL.search(text) is not None
    if (m := _MOVED.search(text)) and not technical:
        span = text[m.start() :]
        if lead := _LEAD.match(text):  # "Back in 2015 I moved to Boston" reads "... moved to Boston back in 2015"
            span = f"{span.rstrip(' .!')} {lead.group('lead')[:1].lower()}{lead.group('lead')[1:]}"
        sentence, when = standalone(clause, span, "past")
        out.append(
            make_draft(
                clause,
                "moved",
                MemoryKind.FACT,
                sentence,
                0.85,
                0.7,
                event_time=when or clause.reference,
                attribute="residence",
                value=m.group("v").rstrip("."),
                entities=[m.group("v").rstrip("."), *([m.group("old")] if m.group("old") else [])],
            )
        )
    elif m := _LIVE.search(text):
        sentence, _ = standalone(clause, text[m.start() : m.end()], None)
        out.append(
            make_draft(
                clause,
                "live-in",
                MemoryKind.FACT,
                sentence,
                0.85,
                0.7,
                attribute="residence",
                value=m.group("v").rstrip("."),
                entities=[m.group("v").rstrip(".")],
            )
        )
    if m := _FROM.search(text):
        sentence, _ = standalone(clause, text[m.start() : m.end()], None)
        out.append(
            make_draft(
                clause,
                "from",
                MemoryKind.FACT,
                sentence,
                0.8,
                0.6,
                attribute="origin",
                value=m.group("v"),
                entities=[m.group("v")],
            )
        )
    if m := _ALLERGY.search(text):
        sentence, _ = standalone(clause, text[m.start() : m.end()], None)
        out.append(
            make_draft(
                clause,
                "allergy",
                MemoryKind.FACT,
                sentence,
                0.9,
                0.9,
                attribute=f"allergy {claim_key(m.group('v'))}",
                value="allergic",
            )
        )
    if m := _DIET.search(text):
        sentence, _ = standalone(clause, text[m.start() : m.end()], None)
        out.append(
            make_draft(clause, "diet", MemoryKind.FACT, sentence, 0.85, 0.8, attribute="diet", value=m.group("v"))
        )
    if m := _NAME.search(text):
        sentence = finish_sentence(f"{clause.subject}'s name is {m.group('v')}")
        out.append(
            make_draft(
                clause,
                "name",
                MemoryKind.FACT,
                sentence,
                0.9,
                0.8,
                attribute="name",
                value=m.group("v"),
                entities=[m.group("v")],
            )
        )
    if m := _BIRTHDAY.search(text):
        sentence = finish_sentence(f"{clause.subject}'s birthday is on {m.group('v')}")
        out.append(
            make_draft(
                clause, "birthday", MemoryKind.FACT, sentence, 0.9, 0.7, attribute="birthday", value=m.group("v")
            )
        )
    for pattern, rule, attribute in ((_HAVE_COUNT, "have-count", "family"), (_HAVE_NONE, "have-none", "family")):
        if m := pattern.search(text):
            sentence, _ = standalone(clause, text[m.start() : m.end()], None)
            out.append(
                make_draft(
                    clause,
                    rule,
                    MemoryKind.FACT,
                    sentence,
                    0.75,
                    0.6,
                    attribute=f"{attribute} {m.group('v').rstrip('s')}",
                    value=m.group(0),
                )
            )
    if m := _USED_TO.search(text):
        sentence, _ = standalone(clause, text[m.start() : m.end()], "past")
        out.append(make_draft(clause, "used-to", MemoryKind.FACT, sentence, 0.65, 0.4))
    if m := _HABIT.search(text):
        sentence, _ = standalone(clause, text[m.start() : m.end()], None)
        verb, what = m.group("verb").lower(), (m.group("what") or "").strip().lower()
        key = what if verb in ("play", "practice", "practise", "do", "go") and what else gerund(verb.split()[-1])
        out.append(
            make_draft(
                clause,
                "habit",
                MemoryKind.FACT,
                sentence,
                0.7,
                0.5,
                attribute=f"habit {claim_key(key)}" if key.replace(" ", "").isalpha() else None,
                value="regularly" if key.replace(" ", "").isalpha() else None,
                entities=capitalised_names(m.group(0)),
            )
        )
    return out
