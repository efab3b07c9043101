"""Shared parts of the offline rules: sentence filters, word lists, the ``Clause`` read and the ``Draft`` proposed."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memlane.enrich.entities import extract_entities
from memlane.enrich.relative import MONTH_NAMES
from memlane.extraction.rewrite import Prefer, absolutise, finish_sentence, in_third_person
from memlane.models import MemoryKind

CUT = r"(?=\s*(?:[,;.!?]|\bbut\b|\bbecause\b|\bso\b(?! much)|\band i\b|$))"
OBJ = rf"(?P<obj>[^,;.!?]{{2,80}}?){CUT}"
PLACE = r"(?P<v>[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3})"
ANIMALS = (
    r"puppy|dog|cat|kitten|parrot|bird|rabbit|bunny|hamster|guinea pig|horse|pony|goldfish|fish|turtle|tortoise|"
    r"snake|lizard|gecko|ferret|budgie|cockatiel|chicken|goat"
)
#: Breeds and other words for a pet, longest first, read only where a pet is named ("a border collie called Pepper").
PET_WORDS = (
    r"border collie|golden retriever|german shepherd|jack russell(?: terrier)?|cocker spaniel|french bulldog|"
    r"great dane|shih tzu|shiba inu|maine coon|bearded dragon|hermit crab|guinea pig|collie|labrador|retriever|"
    r"labradoodle|goldendoodle|cockapoo|poodle|beagle|terrier|spaniel|shepherd|husky|corgi|dachshund|pug|bulldog|"
    r"frenchie|chihuahua|greyhound|whippet|schnauzer|rottweiler|doberman|pit ?bull|maltese|pomeranian|samoyed|"
    r"sheepdog|sheltie|dalmatian|akita|mastiff|vizsla|weimaraner|mutt|pup|kitty|tabby|siamese|ragdoll|sphynx|"
    r"hedgehog|chinchilla|gerbil|axolotl|tarantula|cockatoo|parakeet|canary|macaw|iguana|alpaca|donkey|" + ANIMALS
)
RELS = (
    r"wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|son|daughter|sister|brother|mom|mum|mother|dad|father|"
    r"best friend|friend|boss|cousin|grandma|grandmother|grandpa|grandfather|aunt|uncle|niece|nephew|roommate|"
    r"colleague|coworker|stepson|stepdaughter|kid|child|baby|neighbou?r|flatmate"
)
SINGLE_RELS = frozenset(
    [
        "wife",
        "husband",
        "partner",
        "boyfriend",
        "girlfriend",
        "fiance",
        "fiancé",
        "fiancee",
        "fiancée",
        "mom",
        "mum",
        "mother",
        "dad",
        "father",
        "boss",
    ]
)
JOBS = (
    r"engineer|developer|programmer|nurse|doctor|teacher|lawyer|accountant|designer|architect|chef|cook|baker|"
    r"writer|journalist|artist|musician|student|scientist|researcher|pharmacist|dentist|therapist|counsell?or|"
    r"electrician|plumber|carpenter|mechanic|pilot|firefighter|police officer|paramedic|consultant|manager|analyst|"
    r"librarian|photographer|barista|waiter|waitress|farmer|veterinarian|vet|professor|lecturer|freelancer|"
    r"translator|social worker|cashier|surgeon|midwife|dietitian|nutritionist|coach|personal trainer|tutor|"
    r"entrepreneur|data scientist|product manager|project manager|software engineer|web developer|graphic designer"
)
MONTHS_DAYS = frozenset([*MONTH_NAMES, "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
DEICTIC = re.compile(
    r"^(?:it|that|this|these|those|you|u|ya|him|her|them|the way|when|how|what|everything|everyone|everybody|"
    r"so much|too|a lot|one|here|there)\b",
    re.IGNORECASE,
)
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|'[^']{12,}'")
HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|imagine|suppose|supposing|wish|would|could|might|maybe|perhaps|someday|one day|i'd|"
    r"what if|in theory|hypothetically|pretend)\b",
    re.IGNORECASE,
)
SARCASM = re.compile(
    r"\b(?:yeah,? right|oh,? great|oh,? joy|what a joy|just love (?:it )?when|love (?:being|getting) (?:stuck|ignored|"
    r"yelled|woken)|love (?:waiting|doing (?:taxes|paperwork|chores)|traffic|mondays)|/s)\b|^\s*(?:sure|great|"
    r"wonderful|fantastic|perfect),\s+(?:i|because)\b",
    re.IGNORECASE,
)
HEDGE = re.compile(r"^\s*i (?:think|guess|suppose|feel like|believe|kinda|kind of|sort of)\b", re.IGNORECASE)
TRIVIAL_ACT = re.compile(
    r"^(?:grab|get (?:a|some|back|going|ready)|go to (?:bed|sleep)|go (?:now|home|offline)|be (?:honest|right back|"
    r"back|fine|there|quick|brief|late)|brb|check|try|see|think|tell|ask|say|let|take a (?:look|nap|shower|break)|"
    r"call it|have a look|head (?:out|off)|sleep|eat (?:now|something|lunch|dinner)|make sure|keep|do (?:that|it|this)|"
    r"look|need|figure|wait|pass|stop|leave it|talk|text|message|reply|answer)\b",
    re.IGNORECASE,
)
# a sentence ends at . ! ? (not after a title: "Dr. Okafor") or a line break
SENTENCES = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<=[.!?])\s+|\n+")


@dataclass
class Clause:
    """One sentence of a turn being read, with what the rules need to know about it."""

    text: str
    subject: str
    reference: datetime
    hedged: bool
    fired: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Draft:
    """What a rule proposes; becomes a ``Candidate`` once sources are attached."""

    kind: MemoryKind
    text: str
    confidence: float
    importance: float
    rule: str
    event_time: datetime | None = None
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None
    entities: tuple[str, ...] = ()


RuleFn = Callable[[Clause], list[Draft]]


_CHANGE_WORDS = re.compile(
    r"\s+(?:any ?more|now|these days|nowadays|lately|at all|either|instead|any longer|no more)\b.*$", re.IGNORECASE
)


def claim_key(text: str) -> str:
    """The first words of an object, without articles or change words: the key a preference is compared by.

    "the coffee anymore" and "coffee" both give "coffee", so "I don't like coffee anymore" states the same claim
    as "I love coffee", with another value.
    """
    text = _TRAILING_TIME.sub("", _CHANGE_WORDS.sub("", text.strip()))
    words = re.sub(r"^(?:the|a|an|my|some|any)\s+", "", text.lower()).split()
    return " ".join(words[:4])


#: What a thing someone prefers is a kind of: "I prefer tea now" states the favourite drink.
CATEGORIES: dict[str, str] = {
    **dict.fromkeys(
        [
            "coffee",
            "tea",
            "decaf",
            "espresso",
            "latte",
            "cappuccino",
            "matcha",
            "beer",
            "wine",
            "water",
            "juice",
            "soda",
            "cola",
            "kombucha",
            "cider",
            "whisky",
            "whiskey",
            "gin",
            "vodka",
            "rum",
            "lemonade",
            "smoothies",
            "smoothie",
            "hot",
            "chocolate",
            "green",
            "tea",
            "black",
            "tea",
            "herbal",
            "tea",
        ],
        "drink",
    ),
    **dict.fromkeys(
        ["oat milk", "almond milk", "soy milk", "cow's milk", "whole milk", "skim milk", "rice milk"], "milk"
    ),
    **dict.fromkeys(["cats", "dogs"], "pet"),
    **dict.fromkeys(["trains", "planes", "buses", "cars", "bikes"], "transport"),
    **dict.fromkeys(["audiobooks", "ebooks", "e-books", "podcasts", "paperbacks"], "reading format"),
}


#: The topic (``memlane.enrich.classify.CATEGORIES``) of a claim, by its attribute or the attribute's first word.
_TOPICS: dict[str, str] = {
    "residence": "travel",
    "origin": "travel",
    "planned move": "travel",
    "plan": "travel",
    "employer": "work",
    "occupation": "work",
    "occupation goal": "work",
    "boss": "work",
    "colleague": "work",
    "coworker": "work",
    "studies": "education",
    "diet": "food",
    "allergy": "health",
    "pet": "family",
    "family": "family",
    "favourite": "preferences",
    "preference": "preferences",
    "habit": "hobbies",
    **dict.fromkeys(
        ["partner", "boyfriend", "girlfriend", "fiance", "fiancé", "fiancee", "fiancée", "friend", "best friend"],
        "relationships",
    ),
    **dict.fromkeys(["roommate", "flatmate", "neighbour", "neighbor"], "relationships"),
}
_FAMILY = frozenset(
    [
        "wife",
        "husband",
        "son",
        "daughter",
        "sister",
        "brother",
        "mom",
        "mum",
        "mother",
        "dad",
        "father",
        "cousin",
        "grandma",
        "grandmother",
        "grandpa",
        "grandfather",
        "aunt",
        "uncle",
        "niece",
        "nephew",
        "stepson",
        "stepdaughter",
        "kid",
        "child",
        "baby",
    ]
)


def topic_of(attribute: str | None) -> str | None:
    """The topic a claim belongs to ("residence" -> "travel", "pet rex" -> "family", "employer" -> "work"), or None
    when its attribute says nothing the rules know (then the memory's text decides, as for any memory).
    """
    if not attribute:
        return None
    key = attribute.strip().lower()
    if key in _TOPICS:
        return _TOPICS[key]
    for size in (2, 1):  # "best friend sam", "pet rex", "preference coffee"
        head = " ".join(key.split()[:size])
        if head in _TOPICS:
            return _TOPICS[head]
        if head in _FAMILY:
            return "family"
    return None


def category_of(key: str) -> str | None:
    """The category of a claim key ("tea" -> "drink"), or None when it is not one the rules know."""
    return CATEGORIES.get(key.strip().lower())


def gerund(verb: str) -> str:
    """The -ing form of a base verb ("run" -> "running", "smoke" -> "smoking"); -ing forms are kept."""
    low = verb.lower()
    if low.endswith("ing") and len(low) > 4:
        return low
    if low.endswith("e") and not low.endswith(("ee", "ye", "oe")):
        return low[:-1] + "ing"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnprt]", low):
        return low + low[-1] + "ing"
    return low + "ing"


#: A time phrase a sentence may open with ("Two weeks ago I ran ...", "Last May I visited ...").
LEADING_TIME = (
    r"(?:yesterday|today|earlier today|this (?:morning|afternoon|evening|week|month|year|weekend|spring|summer|"
    r"autumn|fall|winter)|last (?:\w+)|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a few|a couple of|several|\d+) (?:days?|weeks?|months?|years?) ago|in (?:19|20)\d\d|back in \w+(?: \d{4})?|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))"
)
_TRAILING_TIME = re.compile(
    rf"\s+(?:{LEADING_TIME}|(?:in|since|until|by) (?:january|february|march|april|may|june|july|august|september|"
    r"october|november|december|spring|summer|autumn|fall|winter)\b|for (?:a|an|\w+) (?:days?|weeks?|months?|years?))"
    r"\b.*$",
    re.IGNORECASE,
)


def standalone(clause: Clause, span: str, prefer: Prefer | None) -> tuple[str, datetime | None]:
    """``span`` in the third person with absolute dates, as a sentence; and the start of its first time span."""
    text, when = absolutise(span, clause.reference, prefer)
    return finish_sentence(in_third_person(text, clause.subject)), when


def make_draft(
    clause: Clause,
    rule: str,
    kind: MemoryKind,
    text: str,
    confidence: float,
    importance: float,
    *,
    event_time: datetime | None = None,
    attribute: str | None = None,
    value: str | None = None,
    entities: Sequence[str] = (),
) -> Draft:
    """A ``Draft`` from ``clause`` (marking the rule as fired; hedged clauses lose 0.2 of confidence)."""
    clause.fired.add(rule)
    if clause.hedged:
        confidence -= 0.2
    return Draft(
        kind=kind,
        text=text,
        confidence=round(max(confidence, 0.05), 2),
        importance=importance,
        rule=rule,
        event_time=event_time,
        subject=clause.subject,
        attribute=attribute,
        value=value.strip() if value else None,
        entities=tuple(entities),
    )


def rx(pattern: str) -> re.Pattern[str]:
    """Patterns are case-insensitive except where they ask for capitalised names (``[A-Z]``) in a scoped group."""
    return re.compile(pattern)


def capitalised_names(text: str) -> list[str]:
    """The named entities of ``text`` ("Agatha Christie", "Tokyo"), by ``memlane.enrich.entities``; no dates."""
    mentions = extract_entities(text)
    names = [m.text for m in mentions if m.kind not in ("date", "quantity") and m.text[:1].isupper()]
    return list(dict.fromkeys(names))
