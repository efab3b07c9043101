"""Finding the entities a turn mentions, by offline rules (resolving them per user is `memlane.enrich.aliases`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from memlane.enrich.cues import may_hold
from memlane.enrich.temporal import candidate_spans
from memlane.records.entities import CLITIC as _CLITIC
from memlane.records.entities import AliasRow as AliasRow  # re-exported: the record lives at the bottom
from memlane.records.entities import canonical as canonical

log = logging.getLogger(__name__)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _phrases(text: str) -> frozenset[str]:
    return frozenset(" ".join(phrase.split()) for phrase in text.split(","))


KINDS: Final = ("person", "place", "organisation", "product", "date", "quantity", "other")


@dataclass(frozen=True)
class EntityMention:
    """An entity named in a text: its surface ``text``, ``kind`` (one of ``KINDS``) and character offsets.

    ``start``/``end`` index into the text (``text[start:end]``); a speaker mention added for a speaker the text
    does not name has ``start == end == -1``.
    """

    text: str
    kind: str
    start: int
    end: int


# ---------------------------------------------------------------------------------------------------------------
# Word lists: closed classes and conversational fillers, data rather than logic.

_KIN: Final = (
    "sister|brother|sis|bro|mom|mum|mother|dad|father|mommy|daddy|parents|wife|husband|partner|fiance|fiancee|"
    "fiancé|fiancée|boyfriend|girlfriend|bf|gf|son|daughter|kid|kids|child|baby|grandma|grandmother|grandpa|"
    "grandfather|granddaughter|grandson|aunt|auntie|uncle|cousin|niece|nephew|friend|best friend|bestie|buddy|"
    "roommate|flatmate|neighbor|neighbour|boss|manager|colleague|coworker|co-worker|mentor|teacher|coach|"
    "therapist|doctor|dog|cat|puppy|kitten|pet|horse|bird|hamster|rabbit|bunny|ex|stepmom|stepdad|in-laws|"
    "mother-in-law|father-in-law|sister-in-law|brother-in-law"
)
_ANIMALS: Final = _words(
    """
    dog cat puppy kitten pet horse bird hamster rabbit bunny
    """
)

_HONORIFICS: Final = _words(
    """
    mr mrs ms miss mx dr prof professor sir madam dame lord lady aunt auntie uncle grandma grandpa coach officer
    captain judge rev father sister brother saint st
    """
)

# Capitalised words that are rarely names when they open a sentence or stand alone.
_FILLERS: Final = _words(
    """
    i i'm i've i'd i'll im ive id ill the a an hey hi hello hiya yo oh ah wow yay yes yeah yep nope no ok okay thanks thank
    thx congrats congratulations sorry please sure great good nice cool awesome amazing lol haha hmm well so and
    but or because if when where what who whom whose which why how that this these those there here it its it's
    they we you he she me my our your his her their them us just also really maybe anyway btw omg wait look see
    let let's yesterday today tomorrow tonight honestly actually absolutely totally definitely exactly glad happy
    love welcome bye goodbye cheers dear morning evening afternoon night hope sounds sound can could would should
    will did do does is are was were have has had been being am not never always sometimes often usually then now
    after before during since until while though although still even only all any some every each both either
    neither one two three first last next same other another such very too more most much many few several small
    long short best better good bad happy sad totally wanna gonna gotta yup alright mhm
    """
)
# Closed-class words (prepositions, conjunctions, discourse adverbs), and "note" and "using", which documentation
# opens lines and headings with: never a name alone, nor at a sentence's start ("For", "Using Git"), nor a name's
# last word ("Vim To" in wrapped help text); inside a run they may be part of one ("Under Armour").
FUNCTION_WORDS: Final = _words(
    """
    for in on at to by with from into onto upon about above below under over between through throughout without
    within via than as off out up down across along among against toward towards beside besides beyond despite
    except inside outside nor yet unless whether whereas however otherwise thus therefore hence moreover
    furthermore instead meanwhile likewise nevertheless nonetheless consequently similarly additionally note
    using etc
    """
)
_NOT_NAMES: Final = _FILLERS | FUNCTION_WORDS

_ORG_SUFFIX: Final = _words(
    """
    inc inc. corp corp. corporation llc ltd ltd. co co. company university college school academy institute bank
    hospital clinic club group foundation association society centre center church studio studios labs lab agency
    team fc united airlines motors technologies systems partners council ministry department museum gallery
    library theatre theater charity shelter restaurant cafe café bakery store shop
    """
)
_PLACE_SUFFIX: Final = _words(
    """
    street st. avenue ave road rd boulevard blvd lane park lake river mountain mountains mount beach city county
    island islands valley bay coast canyon forest desert falls village town square bridge state province region
    hills tower palace castle temple cathedral airport station national
    """
)

# Countries and large cities most often named in conversation; any other place is found by its cue ("in X").
_PLACES: Final = _phrases(
    """
    usa, us, america, canada, mexico, brazil, argentina, chile, peru, colombia, uk, england, scotland, wales,
    ireland, france, germany, spain, portugal, italy, greece, netherlands, holland, belgium, switzerland, austria,
    sweden, norway, denmark, finland, iceland, poland, russia, ukraine, turkey, egypt, morocco, kenya, nigeria,
    ghana, ethiopia, south africa, israel, india, pakistan, china, japan, korea, south korea, vietnam, thailand,
    singapore, malaysia, indonesia, philippines, australia, new zealand, hawaii, alaska, california, texas,
    florida, new york, new york city, nyc, london, paris, berlin, madrid, rome, barcelona, amsterdam, vienna,
    prague, dublin, lisbon, athens, istanbul, moscow, tokyo, kyoto, beijing, shanghai, hong kong, seoul, bangkok,
    delhi, mumbai, sydney, melbourne, toronto, vancouver, montreal, chicago, boston, seattle, san francisco, los
    angeles, miami, las vegas, vegas, denver, austin, portland, atlanta, nashville, orlando, washington, munich,
    hamburg, cairo, dubai, rio, bali, mexico city, yosemite, europe, asia, africa
    """
)

_PLACE_CUE: Final = re.compile(r"(?:\b(?:in|to|from|near|visit|visited|visiting|around|across|moved to|trip to)\s+)$")
_ORG_CUE: Final = re.compile(r"(?:\b(?:work(?:s|ed|ing)? (?:at|for)|job at|joined|hired by|intern(?:ing)? at)\s+)$")
_PRODUCT_CUE: Final = re.compile(
    r"(?:\b(?:bought|buy|buying|purchased|ordered|got (?:a|an|the|my)|new|using|use|uses|play(?:s|ed|ing)?|"
    r"watch(?:ed|ing)?|read(?:ing)?|download(?:ed)?|install(?:ed)?)\s+(?:(?:a|an|the|my)\s+)?)$"
)
_PERSON_CUE: Final = re.compile(r"(?:\b(?:named|called|with|met|meet|told|asked|and|hey|hi|dear|thanks|thank you)\s+)$")
# A run that is the whole of a quoted string ("Little Women", “The Lean Startup”) is a title, not a person
_QUOTE_OPEN: Final = re.compile(r"[\"“](?:(?:the|a|an)\s+)?$", re.IGNORECASE)
_QUOTE_CLOSE: Final = re.compile(r"[.,!?]?[\"”]")
# Nobody is "the Minnesota Wolves" or "a Financial Analyst": after an article, two capitalised words are no person
_ARTICLE: Final = re.compile(r"\b(?:the|a|an)\s+$")

# A capitalised word: an upper-case first letter (Latin, with accents) then word characters, apostrophes, hyphens.
_CAP_WORD = r"[A-ZÀ-ÖØ-Þ][\w'’\-]*"
_CONNECTOR = r"(?:of|de|del|della|da|di|la|le|van|von|der|den|du|the|&|y|al|bin|ibn)"
_TITLE = r"(?:(?:Mr|Mrs|Ms|Dr|Prof|St|Mt)\.\s+)"
_CONNECTOR_WORD: Final = re.compile(_CONNECTOR, re.IGNORECASE)
# Between the words of a name: spaces, or one line break of wrapped text; never a tab (a column or an indent) or a
# blank line (a title above its text: "Vim FAQ" then "You can ...")
_GAP = r"(?:[^\S\t\n\r]*\r?\n[^\S\t\n\r]*|[^\S\t\n\r]+)"
_CAP_RUN: Final = re.compile(rf"(?<![\w'’]){_TITLE}?{_CAP_WORD}(?:{_GAP}(?:{_CONNECTOR}{_GAP}){{0,2}}{_CAP_WORD})*")
_CAPITAL: Final = re.compile(r"[A-ZÀ-ÖØ-Þ]")  # where a capitalised run can start (a title starts with one too)
# What stands before a word that opens a sentence, a line, a column (a tab), a quote or a bracket, once the spaces
# between are skipped; a dash does when a space follows it ("- Anna" in a list, not "Jean-Luc")
_BREAKS: Final = frozenset('.!?…:;\n\t"“”(')
_DASHES: Final = frozenset("-–—")
_MIXED_CASE: Final = re.compile(r"(?<![\w'’])[a-z]+[A-Z][\w\-]*")  # iPhone, eBay, macOS
# "the kids" is the speaker's kids, as "my kids" is (one's own children are spoken of so most of the time)
_KIN_MENTION: Final = re.compile(
    rf"\b(?:(?:my|our|his|her|their|your|the user['’]s)\s+(?:(?:little|big|older|younger|baby|best)\s+)?(?:{_KIN})"
    r"|the\s+(?:kids|children))\b",
    re.I,
)
_POSSESSIVE_KIN: Final = re.compile(
    rf"(?<![\w'’])({_CAP_WORD})['’]s\s+(?:(?:little|big|older|younger|best)\s+)?(?:{_KIN})\b"
)
# "my friend "Big Mike"": a quoted name right after a kin word is that person's, not a title
_KIN_BEFORE: Final = re.compile(rf"\b(?:{_KIN})\s*[,:]?\s*$", re.I)

_UNITS = (
    r"%|percent|per\s?cent|km|kms|kilometers?|kilometres?|miles?|mi|m|meters?|metres?|cm|mm|ft|feet|foot|inch(?:es)?|"
    r"kg|kgs|kilos?|g|grams?|lbs?|pounds?|oz|ounces?|l|liters?|litres?|ml|gallons?|hours?|hrs?|minutes?|mins?|"
    r"seconds?|secs?|days?|weeks?|months?|years?|yrs?|times|x|dollars?|bucks|euros?|cents?|pence|yen|calories|"
    r"kcal|steps|laps|reps|sets|pages|books|kids|children|people|degrees|°[cf]?|gb|mb|tb|ghz|mph|kph|km/h"
)
_QUANTITY: Final = re.compile(
    rf"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn|million|billion|thousand))?"
    rf"|(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:k|million|billion|thousand|hundred))?(?:\s?(?:{_UNITS})\b)?)",
    re.IGNORECASE,
)

# Quick tests that skip a scan that cannot match: every kin mention holds the last word of a kin term ("law" of
# "mother-in-law", after a space or hyphen, before a boundary) or "kids"/"children"; every mixed-case word a small
# letter before a capital; every quantity a digit.
KIN_CUES: Final = frozenset(re.findall(r"\w+", term)[-1] for term in _KIN.split("|")) | {"kids", "children"}
_SMALL_CAPITAL: Final = re.compile(r"[a-z][A-Z]")
_DIGIT: Final = re.compile(r"\d")

_POSSESSIVE: Final = re.compile(r"['’]s$|['’]$")


def _cap_runs(text: str) -> list[re.Match[str]]:
    """``list(_CAP_RUN.finditer(text))``, trying the pattern only at capitals, where every match starts.

    Each try is ``match`` at a capital, in order, resuming after each match, as ``finditer`` does; the look-behind
    still sees the character before.
    """
    out: list[re.Match[str]] = []
    resume = 0
    for capital in _CAPITAL.finditer(text):
        start = capital.start()
        if start < resume:
            continue
        match = _CAP_RUN.match(text, start)
        if match is not None:
            out.append(match)
            resume = match.end()
    return out


def _strip_honorific(key: str) -> str:
    words = key.split()
    while len(words) > 1 and words[0] in _HONORIFICS:
        words = words[1:]
    return " ".join(words)


def is_sentence_start(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence, a line, a column, a quote or a bracket (its capital says
    nothing), whatever spaces or indent stand between.
    """
    end = start
    while end > 0 and text[end - 1].isspace() and text[end - 1] not in _BREAKS:  # a line break or tab is one
        end -= 1
    if end == 0:  # the text's first word; spaces before it mean a fragment cut from a sentence (" Lisbon.")
        return start == 0
    before = text[end - 1]
    return before in _BREAKS or (before in _DASHES and end < start)


def _kind_of(text: str, start: int, end: int, span: str, words: list[str]) -> str:
    """Guess the kind of the capitalised span ``text[start:end]`` from its suffix word, the words before it and
    whether it is all of a quoted string.
    """
    keys = {_CLITIC.sub("", word.lower()) for word in words}
    first = words[0].lower().rstrip(".")
    if keys & _ORG_SUFFIX:
        return "organisation"
    if keys & _PLACE_SUFFIX or canonical(span) in _PLACES:
        return "place"
    if first in _HONORIFICS and len(words) > 1:
        return "person"
    quote = _QUOTE_OPEN.search(text, max(0, start - 5), start)
    if (
        quote
        and _QUOTE_CLOSE.match(text, end)
        and not _KIN_BEFORE.search(text, max(0, quote.start() - 30), quote.start())
    ):
        return "product"  # a title, as "watched X" and "read X" make one
    before = text[max(0, start - 40) : start].lower()
    if _ORG_CUE.search(before):
        return "organisation"
    if _PRODUCT_CUE.search(before) or any(ch.isdigit() for ch in span):
        return "product"
    if _PLACE_CUE.search(before) or before.endswith(" at "):
        return "place"
    if len(span) > 1 and span.isupper():
        return "other"
    if _PERSON_CUE.search(before) or (len(words) <= 2 and not _ARTICLE.search(before)):
        return "person"
    return "other"


def _plain(word: str) -> str:
    return word.lower().replace("’", "'")


_ALWAYS_DROP: Final = frozenset({"i", "i'm", "i've", "i'd", "i'll", "im", "ive"})


def never_a_name(plain: str) -> bool:
    """Whether a word is never part of a name, wherever it stands: "I", "I'm", and every negated verb ("Don't")."""
    return plain in _ALWAYS_DROP or plain.endswith("n't")


# What after a sentence-opening word makes it a name: a possessive, "Anna, my ...", "Anna and I", "Anna said", or
# "Ahmed and Salma" (joined to a capitalised word that does not open a sentence, as names are to names)
_OPENER_NAME: Final = re.compile(
    rf"(?:['’]s\b|\s*,\s*(?:my|our)\b|\s+and\s+I\b|\s+(?:said|says|told|asked)\b|\s+(?:and|&)\s+{_CAP_WORD})"
)


def _trim(words: list[str], text: str, start: int, known: Collection[str]) -> tuple[list[str], int]:
    """Drop leading words that are sentence openers or fillers rather than names; returns words and new start."""
    offset = start
    while words:
        word = words[0]
        plain = _plain(word)
        opener = is_sentence_start(text, offset)
        filler = never_a_name(plain) or (plain in _NOT_NAMES and (opener or len(words) == 1))
        if not filler and opener and len(words) > 1 and canonical(word) not in known:
            # "Woohoo Melanie!", "Go Jon!", "Anytime Nate": an opening word before a known name calls that person
            # (unless the whole run is a known name too: "New York" when "York" is also known)
            filler = canonical(" ".join(words[1:])) in known and canonical(" ".join(words)) not in known
        if not filler and opener and len(words) == 1 and canonical(word) not in known:
            after = offset + len(word)
            possessive = _POSSESSIVE.search(word) is not None
            filler = not possessive and _OPENER_NAME.match(text, after) is None and not _is_name_like(text, word)
        if not filler:
            break
        offset += len(word)
        words = words[1:]
        while offset < len(text) and text[offset].isspace():
            offset += 1
    return words, offset


def _is_name_like(text: str, word: str) -> bool:
    """A sentence-opening word counts as a name when the same word also appears capitalised mid-sentence."""
    position = text.find(word, 1)
    while position > 0:
        if not is_sentence_start(text, position) and not text[position - 1].isalnum():
            return True
        position = text.find(word, position + 1)
    return False


def extract_entities(
    text: str,
    speaker: str | None = None,
    *,
    known: Collection[str] = (),
    time_spans: Sequence[tuple[int, int]] | None = None,
) -> list[EntityMention]:
    """The entities ``text`` mentions, in text order, by offline rules; the speaker is always a person mention.

    Capitalised spans not explained by a sentence start (unless the word is capitalised elsewhere too, or is in
    ``known``, a collection of canonical names), with their kind from suffixes ("... University", "... Street")
    and cues ("at/in/from X", "works at X", "bought X"); kinship mentions ("my sister", "Anna's brother");
    mixed-case product names (iPhone); time expressions as ``date``; money, numbers with units as ``quantity``.
    ``time_spans`` are the text's time-expression offsets when the caller already has them.
    """
    mentions: list[EntityMention] = []
    taken = bytearray(len(text))  # characters already inside a mention

    def add(mention: EntityMention) -> None:
        if any(taken[mention.start : mention.end]):
            return
        taken[mention.start : mention.end] = b"\x01" * (mention.end - mention.start)
        mentions.append(mention)

    for start, end in candidate_spans(text) if time_spans is None else time_spans:
        add(EntityMention(text[start:end], "date", start, end))
    if may_hold(text, KIN_CUES):
        for match in _KIN_MENTION.finditer(text):
            add(EntityMention(match.group(0), "person", match.start(), match.end()))
        for match in _POSSESSIVE_KIN.finditer(text):
            if any(taken[match.start() : match.end()]):
                continue
            add(EntityMention(match.group(0), "person", match.start(), match.end()))
            # "Mei's grandmother" names Mei too: whoever has a sister, a boss or a dog is a person
            owner = match.group(1)
            if _plain(owner) not in _NOT_NAMES and not never_a_name(_plain(owner)):
                mentions.append(EntityMention(owner, "person", match.start(1), match.end(1)))
    for match in _cap_runs(text):
        words = match.group(0).split()
        if len(words) == 1 and _plain(words[0]) in _NOT_NAMES:
            continue  # a lone filler ("I", "Thanks", "It's"): what _trim drops wherever it stands
        # "Wish I", "Lately I've", "Mel Can't"; "Vim To" (a function word closes no name)
        while words and (never_a_name(_plain(words[-1])) or _plain(words[-1]) in FUNCTION_WORDS):
            words = words[:-1]
        words, start = _trim(words, text, match.start(), known)
        # connectors left dangling at the end ("Bank of") are not part of the name
        while words and _CONNECTOR_WORD.fullmatch(words[-1]):
            words = words[:-1]
        if not words:
            continue
        end = text.index(words[-1], start) + len(words[-1])
        span = text[start:end]
        stripped = _CLITIC.sub("", span)
        end -= len(span) - len(stripped)
        if len(stripped) < 2 or canonical(stripped) in _NOT_NAMES:
            continue
        add(EntityMention(stripped, _kind_of(text, start, end, stripped, words), start, end))
    if _SMALL_CAPITAL.search(text):
        for match in _MIXED_CASE.finditer(text):
            add(EntityMention(match.group(0), "product", match.start(), match.end()))
    if _DIGIT.search(text):
        for match in _QUANTITY.finditer(text):
            value = match.group(0).rstrip(",. ")
            if value:
                add(EntityMention(value, "quantity", match.start(), match.start() + len(value)))
    mentions.sort(key=lambda m: m.start)
    if speaker and speaker.strip():
        key = canonical(speaker)
        if not any(m.kind == "person" and canonical(m.text) == key for m in mentions):
            mentions.append(EntityMention(speaker.strip(), "person", -1, -1))
    return mentions
