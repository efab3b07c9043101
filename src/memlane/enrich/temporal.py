"""Resolving the time expressions of a turn or a query into absolute UTC spans, against a reference time."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Final, Literal

from dateparser.date import DateDataParser  # type: ignore[import-untyped]  # no stubs shipped

from memlane.enrich.anchored import PREFIX as _ANCHORED_PREFIX
from memlane.enrich.anchored import anchored_span
from memlane.enrich.cues import ascii_words, cue_words, may_hold
from memlane.enrich.relative import NO_TIME, resolve_relative
from memlane.models import as_utc

log = logging.getLogger(__name__)

Prefer = Literal["past", "future"]

#: Bounds of open ranges ("before May 2023" starts at OPEN_START, "after 2020" ends at OPEN_END).
OPEN_START: Final = datetime(1, 1, 1, tzinfo=UTC)
OPEN_END: Final = datetime(9999, 12, 31, tzinfo=UTC)

_GRANULARITY_ORDER: Final = {"day": 0, "weekend": 1, "week": 2, "month": 3, "year": 4, "range": 5, "open": 6}


@dataclass(frozen=True)
class TimeSpan:
    """A half-open span of time ``[start, end)`` in aware UTC, with the words that named it.

    A day is ``[00:00, next 00:00)``. ``granularity`` is ``day``, ``weekend``, ``week`` (Monday to Monday),
    ``month``, ``year``, ``range`` (e.g. "in the past three weeks") or ``open`` (one side unbounded:
    ``OPEN_START`` or ``OPEN_END``).
    """

    start: datetime
    end: datetime
    text: str
    granularity: str = "day"

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` (naive taken as UTC) falls inside the span."""
        moment = as_utc(moment)
        return self.start <= moment < self.end

    def overlaps(self, other: TimeSpan) -> bool:
        """Whether two spans share any instant."""
        return self.start < other.end and other.start < self.end


# ---------------------------------------------------------------------------------------------------------------
# Candidate expressions: one compiled regex finds them, so that a turn without time words costs microseconds and
# dateparser is only ever called on the short matched span.

_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
# Abbreviated days, read only capitalised and after an anchor word or "on" ("last Fri", "next Tues", "on Sat"): alone,
# or in lower case ("this sun"), "sat", "sun" and "wed" are words
_WEEKDAY_ABBR = r"(?-i:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)"
_MONTH_FULL = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_MONTH_ABBR = r"(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?"
_MONTH = rf"(?:{_MONTH_FULL}|{_MONTH_ABBR})"
_UNIT = r"(?:day|week|fortnight|month|year)s?"
_NUM = (
    r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"a\s+couple\s+of|a\s+few|few|several)"
)
_YEAR = r"(?:19[5-9]\d|20[0-4]\d)"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
# Nouns that make a four-digit number a count ("2000 meters"), not a year.
_COUNTED = (
    r"(?:[a-z]*(?:meter|metre|mile|km|kg|lb|pound|dollar|euro|buck|people|person|calorie|step|word|page|point|"
    r"item|piece|feet|foot|year|day|hour|minute|second|time|member|follower|view|like|subscriber|copie|unit)s?\b)"
)
_ANCHOR = r"(?:last|next|this|coming|past|previous|following)"

_PATTERNS: Final = [
    # ranges reaching back from the reference: "in the past three weeks", "over the last year"
    rf"(?P<window>(?:(?:in|during|over|within|for)\s+)?the\s+(?:last|past)\s+(?:{_NUM}\s+)?{_UNIT})",
    r"(?:the\s+)?(?P<before_last>week|month|year)\s+(?:before\s+last|after\s+next)",
    r"(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)",
    rf"(?:{_NUM}\s+{_UNIT}\s+(?:ago|from\s+now|later|earlier))",
    rf"(?:in\s+{_NUM}\s+{_UNIT}(?!\s+ago))",
    r"(?:yesterday|today|tonight|tomorrow)",
    r"(?:last\s+night|this\s+(?:morning|afternoon|evening))",
    rf"(?P<weekend>(?:(?:{_ANCHOR}|the|over\s+the)\s+)?weekend)",
    rf"(?:(?:{_ANCHOR}|on)\s+{_WEEKDAY_ABBR})",
    rf"(?:{_ANCHOR}\s+(?:week|month|year|{_WEEKDAY}|{_MONTH_FULL}))",
    # explicit dates: "8 May 2023", "May 8th, 2023", "May 2023", "2023-05-08", "5/8/2023"
    rf"(?:{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?)",
    rf"(?:{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?(?!\d))",
    rf"(?:{_MONTH},?\s+{_YEAR})",
    r"(?:\d{4}-\d{2}-\d{2})",
    r"(?:\d{1,2}/\d{1,2}/(?:\d{4}|\d{2}))",
    # a month named after a preposition ("in June"; bare "may" is a verb far more often than a month)
    rf"(?:(?:in|since|during|until|till|by|early|late|mid|before|after)(?:\s+|-){_MONTH_FULL}(?:,?\s+{_YEAR})?"
    rf"(?!,?\s+{_DAY}\b))",
    rf"(?:(?:on\s+)?{_WEEKDAY})",
    rf"(?:(?:in|since|during|until|till|by|before|after|from|of|back\s+in)\s+{_YEAR}(?![-/]\d))",
    rf"(?P<bare_year>(?<![\d$€£.,]){_YEAR}(?![\d%]|[-/.,]\d|\s*{_COUNTED}))",
]

_CANDIDATES: Final = re.compile(r"\b(?:" + "|".join(_PATTERNS) + r")\b", re.IGNORECASE)
# A span anchored on an explicit date ("the week before August 3, 2023", "two weeks after 9 June 2023").
_EXPLICIT_DATE = (
    rf"(?:{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?|{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?(?!\d)|{_MONTH},?\s+{_YEAR}"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/(?:\d{4}|\d{2}))"
)
_ANCHORED: Final = re.compile(rf"\b{_ANCHORED_PREFIX}\s+(?:the\s+)?(?P<date>{_EXPLICIT_DATE})\b", re.IGNORECASE)

# Every candidate contains a digit or one of these words: a set lookup rules most turns out in microseconds.
_TIME_WORD_LIST: Final = (
    "yesterday today tonight tomorrow day days week weeks weekend fortnight fortnights month months year years "
    "night morning afternoon evening monday tuesday wednesday thursday friday saturday sunday january february "
    "march april may june july august september october november december jan feb mar apr jun jul aug sep "
    "sept oct nov dec mon tue tues wed thu thur thurs fri sat sun"
)
_TIME_WORDS: Final = frozenset(_TIME_WORD_LIST.split())
_LETTERS: Final = re.compile(r"[a-z]+")
_DIGIT: Final = re.compile(r"\d")


def _may_have_time(text: str) -> bool:
    if _DIGIT.search(text) is not None:
        return True
    # Without digits or underscores, the ASCII words the other scans of the turn share are its letter runs.
    words = ascii_words(text) if "_" not in text else None
    return not _TIME_WORDS.isdisjoint(_LETTERS.findall(text.lower()) if words is None else words)


# The words an expression can start with (or a digit): ``_CANDIDATES`` opens with a word boundary, and every branch
# with one of these words, so in plain ASCII text a match can only start where such a word does ("sep": "sept?").
_FIRST_WORDS: Final = frozenset(re.findall(r"[a-z]+", _NUM + _ANCHOR + _WEEKDAY + _MONTH)) | cue_words(
    "in during over within for the week month year day yesterday today tonight tomorrow last this weekend since "
    "until till by early late mid before after on from of back sep"
)
_TOKEN: Final = re.compile(r"\w+")


def _scan(text: str) -> list[re.Match[str]]:
    """``list(_CANDIDATES.finditer(text))``, for plain ASCII text trying the pattern only where a match can start.

    Each try is ``match`` at a word start, in order, resuming after each match, as ``finditer`` does: the pattern
    sees the whole text from there (its word boundaries and look-behinds read the characters before).
    """
    if not text.isascii():  # Unicode case folding and digits are wider than the first-word test assumes
        return list(_CANDIDATES.finditer(text))
    out: list[re.Match[str]] = []
    resume = 0
    for word in _TOKEN.finditer(text.lower()):
        start = word.start()
        if start < resume or not (word.group() in _FIRST_WORDS or text[start].isdigit()):
            continue
        match = _CANDIDATES.match(text, start)
        if match is not None:
            out.append(match)
            resume = match.end()
    return out


# Cheap cue that a sentence talks about the future: bare weekday or month names then resolve forward.
_FUTURE_CUE: Final = re.compile(
    r"\b(?:will|won't|shall|gonna|going\s+to|plan(?:s|ning)?\s+to|planning|upcoming|coming|next|tomorrow|"
    r"can't\s+wait|looking\s+forward|hope\s+to|intend|scheduled|'ll)\b|'ll\b",
    re.IGNORECASE,
)

# Vague counts, read as a typical value so that dateparser can do the arithmetic ("a few days ago" -> 3 days ago).
_VAGUE_COUNT: Final = re.compile(r"\b(?:a\s+couple\s+of|a\s+couple|a\s+few|few|several)\b")
_VAGUE_VALUE: Final = {"a couple of": "2", "a couple": "2", "a few": "3", "few": "3", "several": "3"}

# An abbreviated day's full name, by its first three letters ("tues" and "thurs" included).
_DAY_NAMES: Final = {d[:3]: d for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}

# Phrases dateparser does not know, rewritten to ones it does (synonyms, not parsing).
_REWRITES: Final = (
    (re.compile(r"^(?:the\s+)?(week|month|year)\s+before\s+last$"), r"2 \1s ago"),
    (re.compile(r"^(?:the\s+)?(week|month|year)\s+after\s+next$"), r"in 2 \1s"),
    (re.compile(r"^(?:the\s+)?day\s+after\s+tomorrow$"), "in 2 days"),
    (re.compile(r"^(\S.*?)\s+later$"), r"in \1"),
    (re.compile(r"^(\S.*?)\s+earlier$"), r"\1 ago"),
    (re.compile(rf"^(?:last|past|previous)\s+({_MONTH_FULL})$"), r"\1"),  # with prefer=past, see _resolve
    (re.compile(rf"^(?:next|coming|following)\s+({_MONTH_FULL})$"), r"\1"),
    (re.compile(r"^(?:coming|following)\s+"), "next "),
    (re.compile(r"^(?:past|previous)\s+"), "last "),
    (re.compile(r"^(early|late|mid)[\s-]+"), "in "),
    (re.compile(r"^(?:since|during|until|till|by|before|after|from|of|back\s+in)\s+"), "in "),
    (re.compile(r"^on\s+"), ""),
    (re.compile(r"\b(mon|tues?|wed|thu|thur|thurs|fri|sat|sun)$"), lambda m: _DAY_NAMES[m.group(1)[:3]]),
    (re.compile(r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s$"), r"\1"),
)

_WHITESPACE: Final = re.compile(r"\s+")


def _normalise(expression: str) -> str:
    """Lower-case, collapse whitespace, spell out vague counts and apply the synonym rewrites."""
    expr = _WHITESPACE.sub(" ", expression.strip().lower())
    expr = _VAGUE_COUNT.sub(lambda match: _VAGUE_VALUE[" ".join(match.group(0).split())], expr)
    for pattern, replacement in _REWRITES:
        expr = pattern.sub(replacement, expr)
    return expr.strip()


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def _span_of(day: date, period: str) -> tuple[datetime, datetime, str]:
    """The calendar span of ``period`` (day, week, month, year) that contains ``day``."""
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return _day_start(start), _day_start(start + timedelta(days=7)), "week"
    if period == "month":
        start = day.replace(day=1)
        following = (start + timedelta(days=32)).replace(day=1)
        return _day_start(start), _day_start(following), "month"
    if period == "year":
        return _day_start(date(day.year, 1, 1)), _day_start(date(day.year + 1, 1, 1)), "year"
    return _day_start(day), _day_start(day + timedelta(days=1)), "day"


@lru_cache(maxsize=64)
def _parser(reference_day: date, prefer: Prefer) -> DateDataParser:
    """A dateparser parser anchored at noon of the reference day (so every time of day maps to the same answers)."""
    base = datetime.combine(reference_day, time(12))
    return DateDataParser(
        languages=["en"],
        settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": prefer, "RETURN_AS_TIMEZONE_AWARE": False},
    )


def _parse(expression: str, reference_day: date, prefer: Prefer) -> tuple[date, str] | None:
    """The day and period one normalised expression names, or None: the common relative phrases read directly
    (``memlane.enrich.relative``, which gives dateparser's answers), the rest by dateparser.
    """
    direct = resolve_relative(expression, reference_day, prefer)
    if direct is None:
        return _parse_dateparser(expression, reference_day, prefer)
    return None if direct == NO_TIME else direct


def _parse_dateparser(expression: str, reference_day: date, prefer: Prefer) -> tuple[date, str] | None:
    """Dateparser's reading of one normalised expression: the day and its period, or None."""
    try:
        data = _parser(reference_day, prefer).get_date_data(expression)
    except Exception:  # dateparser raises assorted errors on odd input; an unreadable expression is no time
        log.debug("dateparser failed on %r", expression, exc_info=True)
        return None
    if data.date_obj is None:
        return None
    return data.date_obj.date(), str(data.period or "day")


@lru_cache(maxsize=16_384)
def _resolve(expression: str, reference_day: date, prefer: Prefer, kind: str) -> tuple[datetime, datetime, str] | None:
    """Resolve one normalised candidate (cached: sessions repeat expressions and reference days).

    A date whose span leaves the calendar ("9999-12-31" ends on a day ``date`` cannot hold) has no span: skipped,
    as an expression dateparser cannot read is.
    """
    try:
        return _resolve_span(expression, reference_day, prefer, kind)
    except (OverflowError, ValueError):
        return None


def _resolve_span(
    expression: str, reference_day: date, prefer: Prefer, kind: str
) -> tuple[datetime, datetime, str] | None:
    if kind == "window":
        # "in the past three weeks": from that many units ago up to the end of the reference day.
        amount = re.sub(r"^(?:(?:in|during|over|within|for) )?the (?:last|past) ", "", expression)
        if not amount[:1].isdigit():
            amount = "1 " + amount
        parsed = _parse(amount + " ago", reference_day, prefer)
        if parsed is None:
            return None
        return _day_start(parsed[0]), _day_start(reference_day + timedelta(days=1)), "range"
    if kind == "weekend":
        modifier = expression.removesuffix("weekend").strip()
        modifier = {"the": "", "over the": "", "this": "", "": ""}.get(modifier, modifier)
        parsed = _parse(f"{modifier} saturday".strip(), reference_day, prefer)
        if parsed is None:
            return None
        saturday = parsed[0]
        return _day_start(saturday), _day_start(saturday + timedelta(days=2)), "weekend"
    parsed = _parse(expression, reference_day, _ANCHORED_MONTH.get(kind, prefer))
    if parsed is None:
        return None
    day, period = parsed
    if kind == "bare_year" or re.fullmatch(rf"in {_YEAR}", expression):
        period = "year"
    return _span_of(day, period)


# The first word of each of the future cue's branches ("won't" holds "won", "'ll" holds "ll").
_FUTURE_CUES: Final = cue_words(
    "will won shall gonna going plan plans planning upcoming coming next tomorrow can looking hope intend scheduled ll"
)


def _prefer(text: str) -> Prefer:
    return "future" if may_hold(text, _FUTURE_CUES) and _FUTURE_CUE.search(text) else "past"


_LAST_MONTH: Final = re.compile(rf"(?:last|past|previous)\s+{_MONTH_FULL}", re.IGNORECASE)
_NEXT_MONTH: Final = re.compile(rf"(?:next|coming|following)\s+{_MONTH_FULL}", re.IGNORECASE)
_ANCHORED_MONTH: Final[dict[str, Prefer]] = {"last_month_name": "past", "next_month_name": "future"}


def _kind(match: re.Match[str]) -> str:
    for name in ("window", "weekend", "bare_year"):
        if match.group(name) is not None:
            return name
    if _LAST_MONTH.fullmatch(match.group(0)):
        return "last_month_name"  # "last August": dateparser reads "august" towards the past
    if _NEXT_MONTH.fullmatch(match.group(0)):
        return "next_month_name"
    return "plain"


def candidate_matches(text: str) -> list[re.Match[str]]:
    """The regex matches of the time expressions in ``text`` (no resolution): computed once per text, then shared
    by event time and importance.
    """
    if not _may_have_time(text):
        return []
    return _scan(text)


def candidate_spans(text: str) -> list[tuple[int, int]]:
    """Character offsets of the time expressions in ``text`` (regex only, no resolution)."""
    return [match.span() for match in candidate_matches(text)]


def extract_times(
    text: str,
    reference: datetime,
    *,
    prefer: Prefer | None = None,
    matches: Sequence[re.Match[str]] | None = None,
) -> list[TimeSpan]:
    """Every time expression of ``text`` resolved against ``reference`` (the turn's timestamp), in text order.

    Bare weekday and month names resolve to the past unless the text has a future cue ("will", "going to",
    "next", ...), or ``prefer`` says otherwise. Expressions dateparser cannot read are skipped. ``matches`` are
    the text's ``candidate_matches`` when the caller already has them.
    """
    if matches is None:
        matches = candidate_matches(text)
    if not matches:
        return []
    reference_day = as_utc(reference).date()
    preference = prefer or _prefer(text)
    spans: list[TimeSpan] = []
    for match in matches:
        expression = _normalise(match.group(0))
        resolved = _resolve(expression, reference_day, preference, _kind(match))
        if resolved is not None:
            start, end, granularity = resolved
            spans.append(TimeSpan(start, end, match.group(0), granularity))
    return spans


def event_time(text: str, reference: datetime, *, matches: Sequence[re.Match[str]] | None = None) -> TimeSpan | None:
    """The single best span for when the thing a turn describes happened: its most precise time expression.

    Ties go to the earliest in the text. None when the text names no time. ``matches`` as in ``extract_times``.
    """
    spans = extract_times(text, reference, matches=matches)
    if not spans:
        return None
    return min(spans, key=lambda span: _GRANULARITY_ORDER.get(span.granularity, 9))


_OPEN_WORD: Final = re.compile(
    r"\b(before|after|since|until|till|by|prior\s+to|earlier\s+than|later\s+than)\s+$", re.IGNORECASE
)
_ENDS_BEFORE: Final = {
    "before": True,
    "prior to": True,
    "earlier than": True,
    "until": False,
    "till": False,
    "by": False,
}
_STARTS_AFTER: Final = {"after": True, "later than": True, "since": False}


def query_time_range(query: str, now: datetime) -> TimeSpan | None:
    """The time constraint of a question, resolved against ``now``; None when it has none.

    "in May 2023", "last year", "yesterday" give their span; "the week before X", "the Sunday after X", "two weeks
    before X" (X an explicit date) give the span they name near X (``memlane.enrich.anchored``); "before X" gives
    ``[OPEN_START, X.start)``,
    "until X" / "by X" give ``[OPEN_START, X.end)``, "after X" gives ``[X.end, OPEN_END)`` and "since X" gives
    ``[X.start, OPEN_END)``, when X is a date. Event anchors ("before the wedding") are not dates and give None.
    Bare weekday and month names resolve to the past.
    """
    if not _may_have_time(query):
        return None
    reference_day = as_utc(now).date()
    anchored = _ANCHORED.search(query)
    if anchored is not None:
        anchor = _resolve(_normalise(anchored.group("date")), reference_day, "past", "plain")
        if anchor is not None:
            groups = anchored.group("direction", "unit", "count", "units")
            try:
                start, end, granularity = anchored_span(
                    anchor[0], anchor[1], direction=groups[0], unit=groups[1], count=groups[2], units=groups[3]
                )
            except OverflowError:  # "the week before 0001-01-01" names no day: read as "before X" below
                pass
            else:
                return TimeSpan(start, end, anchored.group(0), granularity)
    for match in _CANDIDATES.finditer(query):
        resolved = _resolve(_normalise(match.group(0)), reference_day, "past", _kind(match))
        if resolved is None:
            continue
        start, end, granularity = resolved
        preceding = _OPEN_WORD.search(query, 0, match.start())
        begin = preceding.start() if preceding else match.start()
        word = " ".join((preceding.group(1) if preceding else match.group(0).split(None, 1)[0]).lower().split())
        text = query[begin : match.end()]
        if word in _ENDS_BEFORE:
            return TimeSpan(OPEN_START, start if _ENDS_BEFORE[word] else end, text, "open")
        if word in _STARTS_AFTER:
            return TimeSpan(end if _STARTS_AFTER[word] else start, OPEN_END, text, "open")
        return TimeSpan(start, end, text, granularity)
    return None


def forget_phrases() -> None:
    """Empty the cache of resolved time phrases (they are pieces of user text)."""
    _resolve.cache_clear()
