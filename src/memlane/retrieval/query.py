"""Query analysis: the terms, exact-match terms, entities and time constraint of a search query."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memlane.enrich.aliases import EntityResolver, relation_of
from memlane.enrich.entities import FUNCTION_WORDS, EntityMention, canonical, extract_entities
from memlane.enrich.temporal import TimeSpan, query_time_range
from memlane.retrieval.text import STOPWORDS, query_terms

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryFeatures:
    """What a query asks for, as seen before any retrieval.

    ``exact_terms`` are identifiers, codes, versions, file names, URLs, paths and quoted strings that only an
    exact (keyword) match finds; keyword weight should be raised only when there are some. ``category`` and
    ``intent`` are left None here, for the planner to fill from its classifier (``dataclasses.replace``).
    """

    text: str
    terms: list[str]
    exact_terms: list[str]
    entities: list[EntityMention]
    time_range: TimeSpan | None
    wants_time: bool
    is_counting: bool
    category: str | None = None
    intent: str | None = None

    @property
    def entity_keys(self) -> list[str]:
        """Distinct canonical names of the non-date, non-quantity entities, in order."""
        keys: dict[str, None] = {}
        for mention in self.entities:
            if mention.kind not in ("date", "quantity"):
                key = canonical(mention.text)
                if key:
                    keys.setdefault(key, None)
        return list(keys)

    @property
    def has_exact_terms(self) -> bool:
        """Whether the keyword dimension should be weighted up for this query."""
        return bool(self.exact_terms)


# ---------------------------------------------------------------------------------------------------------------
# Exact-match terms. Each pattern is a kind of token that a semantic embedding blurs and BM25 tokenisation splits.

_FILE_EXTENSIONS = (
    r"py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ya?ml|toml|ini|cfg|conf|env|md|rst|txt|csv|tsv|log|xml|html?|"
    r"css|scss|sql|db|sqlite|sh|bash|zsh|ps1|bat|exe|dll|so|dylib|c|h|cc|cpp|hpp|cs|java|kt|go|rs|rb|php|swift|"
    r"lua|r|pl|scala|dart|vue|svelte|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|webp|mp3|mp4|wav|mov|zip|tar|gz|tgz|"
    r"whl|lock|dockerfile|tf|proto|parquet|npz|pt|onnx|bin|iso|dmg|apk|msi"
)
_VERSION_CONTEXT = (
    r"(?:version|ver|release|python|py|node|nodejs|java|ruby|go|golang|rust|php|perl|ios|android|macos|osx|ubuntu|"
    r"debian|fedora|windows|win|kernel|linux|api|sdk|firmware|chrome|firefox|safari|postgres|postgresql|mysql|"
    r"sqlite|redis|django|flask|react|vue|angular|numpy|pandas|torch|pytorch|tensorflow|v)"
)

_EXACT_PATTERNS: Final = (
    # URLs and URIs of any scheme (https://, s3://, postgres://)
    r"(?P<url>\b[a-z][a-z0-9+.-]{1,15}://[^\s<>\"'`]+|\bwww\.[^\s<>\"'`]+)",
    # command-line flags (--no-cache-dir) and issue or PR references of two digits or more (#482; not "#1 fan")
    r"(?P<flag>(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*\b)|(?P<ref>(?<![\w&])#\d{2,}\b)",
    # HTTP status codes (HTTP 503) and wildcard versions (20.x)
    r"(?P<status>\bHTTP\s?[1-5]\d\d\b)|(?P<xversion>\b\d+(?:\.\d+)*\.x\b)",
    # quoted strings ("...", '...', `...`, “...”, ‘...’)
    r"\"(?P<dq>[^\"\n]{1,100})\"|“(?P<cq>[^”\n]{1,100})”|`(?P<bq>[^`\n]{1,100})`|(?<![\w'])'(?P<sq>[^'\n]{1,100})'(?![\w'])"
    r"|‘(?P<csq>[^’\n]{1,100})’(?!\w)",
    # paths: /etc/hosts, ~/x, ./x, src/memlane/x.py, C:\x\y
    r"(?P<path>(?:(?<![\w/])(?:~|\.{1,2})?/[\w.@+-]{1,100}(?:/[\w.@+-]{1,100}){0,30}/?"
    r"|\b[A-Za-z]:\\[^\s\"'<>|]+"
    r"|\b[\w.-]{1,100}(?:/[\w.-]{1,100}){2,30}"
    rf"|\b[\w.-]{{1,100}}/[\w.-]{{1,100}}\.(?:{_FILE_EXTENSIONS})\b))",
    # file names: config.yaml, test_x.py, Dockerfile-like names with an extension
    rf"(?P<file>\b[\w-]{{1,100}}(?:\.[\w-]{{1,100}}){{0,5}}\.(?:{_FILE_EXTENSIONS})\b)",
    # versions: v2.0.1, 2.0.1, Python 3.12, version 4.2
    r"(?P<version>\bv\d+(?:\.\d+)+(?:[-+][\w.]+)?\b|(?<![\d.$€£])\b\d+\.\d+\.\d+(?:[-+][\w.]+)?\b)",
    rf"(?:\b(?P<vword>[A-Z][a-z]+)\s|(?i:\b{_VERSION_CONTEXT}\s*))(?P<cversion>\d+(?:\.\d+)+)\b",
    # dotted identifiers: os.path.join, memlane.enrich, example.com (segments of 2+ characters)
    r"(?P<dotted>\b[A-Za-z_]\w{1,100}(?:\.[A-Za-z_]\w{1,100}){1,10}(?:\(\))?)",
    # calls: foo()
    r"(?P<call>\b[A-Za-z_]\w*\(\))",
    # SCREAMING_CASE, snake_case (anything with an inner underscore)
    r"(?P<underscore>\b[A-Za-z0-9]{0,100}(?:_+[A-Za-z0-9]{1,100}){1,20}_*\b|\b_+[A-Za-z0-9]\w{0,100})",
    # camelCase and PascalCase with two humps or more, and names led by an acronym (OOMKilled, XMLHttpRequest)
    r"(?P<camel>\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b|\b[A-Z]{2,}[a-z]+[A-Za-z0-9]*\b)",
    # codes with digits: E1234, 0x1F, A1B2, SKU123 (letters and digits in one token)
    r"(?P<code>\b0x[0-9A-Fa-f]+\b|\b(?=[A-Za-z0-9-]*[A-Za-z])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\b)",
)
_EXACT: Final = re.compile("|".join(_EXACT_PATTERNS))

# Letters-and-digits tokens that are ordinary words: ordinals, decades, times, measures, ages.
_ORDINARY_CODE: Final = re.compile(
    r"(?i)^(?:\d+(?:st|nd|rd|th|s|am|pm|a|p|k|m|b|km|kms|kg|kgs|g|mg|lb|lbs|mi|ml|cm|mm|ft|in|h|hr|hrs|min|mins|"
    r"sec|secs|d|w|y|yr|yrs|yo|x|gb|mb|tb|kb|mph|kph|fps|hz|khz|mhz|ghz|mp|p|k)|[a-z]\d|covid-?19|mp[34]|"
    r"\d+-(?:year|month|week|day|hour|minute)s?(?:-old)?|[a-z]+-\d+|\d+-[a-z]+)$"
)
_MC_NAME: Final = re.compile(r"^(?:Mc|Mac|De|Di|La|Le|O)[A-Z][a-z]+$")
#: A code span (`git commit --amend`) of more words than this is prose in backticks, not a literal.
MAX_CODE_WORDS: Final = 4
#: A quoted phrase of more words than this ("I went to the support group") is what someone said, not a literal.
MAX_QUOTED_WORDS: Final = 3
_SENTENCE_MARK: Final = re.compile(r"[.!?,;:…]")


def exact_match_terms(text: str) -> list[str]:
    """Identifiers and literals in ``text`` that call for exact (keyword) matching, distinct, in order.

    camelCase / PascalCase, snake_case, SCREAMING_CASE, codes mixing letters and digits (``ERR_CONN_RESET_42``,
    ``E1234``, ``0x1F``), file names with a known extension, versions (``3.12`` after a product or "version",
    ``v2.0.1``), URLs, paths, quoted literals ('Point', "blue widget": never a quoted sentence, which is what
    someone said) and code spans of up to ``MAX_CODE_WORDS`` words. Ordinary capitalised words, acronyms, years,
    plain and decimal numbers, ordinals and measures ("5km", "3pm") are not. Whether such a term is rare enough
    in a scope to be worth a keyword boost is the planner's question (``Retriever.rarity``).
    """
    found: dict[str, None] = {}
    for match in _EXACT.finditer(text):
        kind = match.lastgroup or ""
        if kind == "vword":  # "Python 3.12": the version follows a capitalised name, not a sentence-opening word
            if match.group("vword").lower() in STOPWORDS:
                continue
            kind = "cversion"
        value = match.group(kind) if kind else match.group(0)
        if value is None:
            continue
        value = value.strip()
        if kind in ("url", "path"):
            value = value.rstrip(".,;:!?)")
        if kind == "code" and _ORDINARY_CODE.match(value):
            continue
        if kind == "camel" and _MC_NAME.match(value):
            continue
        if kind == "dotted" and not _is_identifier_like(value):
            continue
        if kind in ("dq", "cq", "sq", "csq") and (len(value) < 2 or not _is_quoted_literal(value)):
            continue  # a quoted word, name or literal is an exact term; a quoted sentence is what someone said
        if kind == "bq" and len(value.split()) > MAX_CODE_WORDS:
            continue
        if value:
            found.setdefault(value, None)
    return list(found)


def _is_quoted_literal(value: str) -> bool:
    """A quoted value is a literal ('Point', "blue widget", "E1234") rather than an utterance ("That sounds great!",
    "I went to the group yesterday"): one token, or up to ``MAX_QUOTED_WORDS`` words without sentence punctuation.
    """
    words = value.split()
    if len(words) <= 1:
        return True
    return len(words) <= MAX_QUOTED_WORDS and not _SENTENCE_MARK.search(value)


def _is_identifier_like(value: str) -> bool:
    """A dotted token is an identifier or domain, not two sentences run together ("fun.Then")."""
    parts = value.rstrip("()").split(".")
    return value.endswith("()") or all(part[:1].islower() or part[:1] == "_" for part in parts[1:])


# ---------------------------------------------------------------------------------------------------------------

_WANTS_TIME: Final = re.compile(
    r"\b(?:what|which)\s+(?:year|month|day|date|time|week|weekend|season|decade)\b|\bhow\s+long\b|"
    r"\bsince\s+when\b|\bwhat\s+age\b|\bhow\s+old\s+was\b|\bwhen\s+(?:did|was|were|is|will|do|does|has|have)\b",
    re.IGNORECASE,
)
# A query that opens with "when" asks when ("When Jon has lost his job?") unless another question word says what it
# asks: "When I enable folding, all the folds are closed. How do I prevent this?" opens a condition, not a question
_OPENING_WHEN: Final = re.compile(r"^\W*when\b", re.IGNORECASE)
_OTHER_QUESTION: Final = re.compile(r"\b(?:how|what|why|which|where|who|whom|whose)\b", re.IGNORECASE)


def asks_when(query: str) -> bool:
    """Whether the query asks for a time (see ``_WANTS_TIME`` and ``_OPENING_WHEN``)."""
    if _WANTS_TIME.search(query) is not None:
        return True
    return _OPENING_WHEN.match(query) is not None and _OTHER_QUESTION.search(query) is None


_COUNTING: Final = re.compile(
    r"\bhow\s+(?:many|often|much)\b|\bnumber\s+of\b|\bhow\s+frequently\b|\bcount\b|\btotal\s+(?:of|number)\b",
    re.IGNORECASE,
)


def _known_mentions(query: str, known: Iterable[str], taken: Collection[str]) -> list[EntityMention]:
    """Mentions of already-known entity names (canonical keys) that the rules did not find themselves.

    A function word is never one ("to", "using"), even where a store written before the rules knew better holds it
    as an entity: every query would otherwise name it.
    """
    folded = canonical(query)
    padded = f" {folded} "
    out: list[EntityMention] = []
    for name in known:
        key = canonical(name)
        if not key or key in taken or key in FUNCTION_WORDS or f" {key} " not in padded:
            continue
        pattern = r"\b" + r"\W+".join(re.escape(word) for word in key.split()) + r"\b"
        match = re.search(pattern, query, re.IGNORECASE)
        if match is None:
            out.append(EntityMention(name, "other", -1, -1))
        else:
            out.append(EntityMention(match.group(0), "other", match.start(), match.end()))
    return out


def analyse_query(query: str, now: datetime, *, known_entities: Iterable[str] = ()) -> QueryFeatures:
    """Analyse a search query: terms, exact-match terms, entities, time constraint, and what it asks for.

    ``known_entities`` are the user's canonical entity names (e.g. from the entity table); those found in the
    query are added to its entities even when the rules would miss them (lower-case names, sentence starts).
    """
    known = [name for name in known_entities if name]
    known_keys = {canonical(name) for name in known}
    mentions = extract_entities(query, known=known_keys)
    taken = {canonical(m.text) for m in mentions}
    mentions.extend(_known_mentions(query, known, taken))
    return QueryFeatures(
        text=query,
        terms=query_terms(query),
        exact_terms=exact_match_terms(query),
        entities=mentions,
        time_range=query_time_range(query, now),
        wants_time=asks_when(query),
        is_counting=_COUNTING.search(query) is not None,
    )


def resolve_relations(features: QueryFeatures, resolver: EntityResolver) -> dict[str, str]:
    """The query's relational mentions resolved through the user's alias table: mention key -> entity.

    The query is the user's: "my sister" and "the user's sister" are the user's sister, and so is "your sister"
    (a query worded by the assistant); "her kids" are the kids of the one person the query names. A mention
    that does not resolve maps to the key it is stored under ("my sister"), which unnamed mentions share.
    """
    people = {canonical(m.text) for m in features.entities if m.kind == "person" and relation_of(m.text) is None} - {""}
    about = people.pop() if len(people) == 1 else None
    out: dict[str, str] = {}
    for mention in features.entities:
        relation = relation_of(mention.text)
        if relation is None:
            continue
        entity, key = resolver.resolve_relation(relation, None, "user", about)
        out[canonical(mention.text)] = entity or key
    return out
