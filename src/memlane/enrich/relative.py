"""The common time phrases ("yesterday", "3 weeks ago", "last friday", "in june", "july 20", "may 8, 2022") read as
dateparser reads them.

dateparser costs about a millisecond a phrase, and its first phrase in a process far more (it compiles its time zone
patterns); these few shapes make up nearly all the time phrases of conversation, and their arithmetic is plain
calendar arithmetic. Each answer is the day and period dateparser gives for the same normalised phrase, reference day
and preference, quirks included (``tests/unit/test_enrich_relative.py`` compares the two over every shape and a
spread of reference days); anything else, and the few cases where dateparser's answer is not plain arithmetic (a day
the month lacks), is left to dateparser (``None`` here).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta
from typing import Final, Literal

Prefer = Literal["past", "future"]

#: Weekday names and their numbers (Monday 0; also read by ``memlane.enrich.anchored``).
WEEKDAYS: Final = {
    name: index
    for index, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
#: Count words dateparser reads as numbers in "<count> <unit> ago" and "in <count> <unit>".
#: Count words and their numbers (also read by ``memlane.enrich.anchored``).
COUNT_WORDS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_COUNT: Final = r"(?P<count>[1-9]\d?|" + "|".join(COUNT_WORDS) + ")"
_UNIT: Final = r"(?P<unit>day|week|fortnight|month|year)s?"
_AGO: Final = re.compile(rf"{_COUNT} {_UNIT} ago")
_IN: Final = re.compile(rf"in {_COUNT} {_UNIT}")
# A window's count word after a "1 " ("over the last two days" is read as "1 two days ago"): dateparser reads the
# count and, for months only, takes the 1 for the day of the month.
_ONE_COUNT: Final = re.compile(r"1 (?P<count>" + "|".join(COUNT_WORDS) + rf") {_UNIT} ago")
MONTH_NAMES: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
#: The abbreviations dateparser reads as months too ("aug 15th"); "may" is already whole.
_ABBREVIATIONS: Final = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
                         "oct": 10, "nov": 11, "dec": 12}  # fmt: skip
_MONTHS: Final = {**{name: index for index, name in enumerate(MONTH_NAMES, start=1)}, **_ABBREVIATIONS}
_MONTH_NAME: Final = "(?P<month>" + "|".join(_MONTHS) + ")"
#: A day of the month, as a number or an ordinal ("8", "8th", "1st").
_DAY_OF_MONTH: Final = r"(?P<day>[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
_YEAR_NUMBER: Final = r"(?P<year>19[5-9]\d|20[0-4]\d)"
_MONTH: Final = re.compile(rf"(?:in )?{_MONTH_NAME}")
#: A day without its year: "july 20", "20th july".
_MONTH_DAY: Final = (re.compile(rf"{_MONTH_NAME} {_DAY_OF_MONTH}"), re.compile(rf"{_DAY_OF_MONTH} {_MONTH_NAME}"))
#: "this may": dateparser reads no time in it.
_THIS_MONTH: Final = re.compile(r"this (?:" + "|".join(_MONTHS) + ")")
_YEAR: Final = re.compile(rf"(?:in )?{_YEAR_NUMBER}")
#: Dates with their year: "may 8, 2022", "8th may 2022" (the day), "in may 2022" (the month).
_DATE: Final = tuple(re.compile(rf"{day.pattern},? {_YEAR_NUMBER}") for day in _MONTH_DAY)
_MONTH_YEAR: Final = re.compile(rf"(?:in )?{_MONTH_NAME} {_YEAR_NUMBER}")
_ANCHORED: Final = re.compile(r"(?P<anchor>last|this|next) (?P<unit>week|month|year|" + "|".join(WEEKDAYS) + ")")

#: Single words (and fixed phrases) naming a day relative to the reference day.
_DAY_WORDS: Final = {
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "yesterday": -1,
    "last night": -1,
    "tomorrow": 1,
}
_PERIOD: Final = {"day": "day", "week": "week", "fortnight": "week", "month": "month", "year": "year"}


def _add_months(day: date, months: int) -> date:
    """``day`` moved by whole months, clipped to the end of a shorter month (as ``relativedelta`` does)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _shift(day: date, unit: str, amount: int) -> date:
    if unit == "day":
        return day + timedelta(days=amount)
    if unit == "week":
        return day + timedelta(weeks=amount)
    if unit == "fortnight":
        return day + timedelta(weeks=2 * amount)
    if unit == "month":
        return _add_months(day, amount)
    return _add_months(day, 12 * amount)


def _weekday(reference: date, weekday: int, anchor: str) -> date:
    """The day named by a weekday: ``last`` strictly before, ``next`` strictly after, ``this`` on or after."""
    ahead = (weekday - reference.weekday()) % 7
    if anchor == "last":
        return reference - timedelta(days=(7 - ahead) % 7 or 7)
    if anchor == "next":
        return reference + timedelta(days=ahead or 7)
    return reference + timedelta(days=ahead)


def _fullmatch(patterns: tuple[re.Pattern[str], ...], text: str) -> re.Match[str] | None:
    return next((m for m in (p.fullmatch(text) for p in patterns) if m is not None), None)


#: What ``resolve_relative`` gives for a shape dateparser reads no time in.
NO_TIME: Final = "no time"


def resolve_relative(expression: str, reference: date, prefer: Prefer) -> tuple[date, str] | Literal["no time"] | None:
    """The day and period dateparser gives a normalised relative ``expression`` at ``reference``; ``NO_TIME``
    when dateparser gives nothing for it; None when the expression is not one of the shapes read here (then ask
    dateparser). A day outside the calendar (before year 1 or after 9999) is left to dateparser as well.
    """
    try:
        return _resolve(expression, reference, prefer)
    except (ValueError, OverflowError):
        return None


def _resolve(expression: str, reference: date, prefer: Prefer) -> tuple[date, str] | Literal["no time"] | None:
    offset = _DAY_WORDS.get(expression)
    if offset is not None:
        return reference + timedelta(days=offset), "day"
    weekday = WEEKDAYS.get(expression)
    if weekday is not None:  # a bare weekday: the nearest one strictly before (or after) the reference day
        return _weekday(reference, weekday, "last" if prefer == "past" else "next"), "day"
    match = _AGO.fullmatch(expression) or _IN.fullmatch(expression)
    if match is not None:
        count_text = match.group("count")
        count = COUNT_WORDS.get(count_text) or int(count_text)
        unit = match.group("unit")
        sign = -1 if expression.endswith(" ago") else 1
        return _shift(reference, unit, sign * count), _PERIOD[unit]
    match = _ONE_COUNT.fullmatch(expression)
    if match is not None:
        unit = match.group("unit")
        day = _shift(reference, unit, -COUNT_WORDS[match.group("count")])
        return (day.replace(day=1), "day") if unit == "month" else (day, _PERIOD[unit])
    match = _fullmatch(_DATE, expression)
    if match is not None:  # that day; a day the month lacks is left to dateparser (which reads no time in it)
        year, month, of_month = int(match.group("year")), _MONTHS[match.group("month")], int(match.group("day"))
        if of_month > calendar.monthrange(year, month)[1]:
            return None
        return date(year, month, of_month), "day"
    match = _MONTH_YEAR.fullmatch(expression)
    if match is not None:  # the reference's day in that month, clipped to its end
        year, month = int(match.group("year")), _MONTHS[match.group("month")]
        return date(year, month, min(reference.day, calendar.monthrange(year, month)[1])), "month"
    match = _YEAR.fullmatch(expression)
    if match is not None:  # the reference day in that year
        return _add_months(reference, 12 * (int(match.group("year")) - reference.year)), "year"
    match = _MONTH.fullmatch(expression)
    if match is not None:  # the nearest such month, this one counting as past; the reference's day in it
        month = _MONTHS[match.group("month")]
        if prefer == "past":
            year = reference.year if month <= reference.month else reference.year - 1
        else:
            year = reference.year if month > reference.month else reference.year + 1
        if reference.day > calendar.monthrange(year, month)[1]:
            return None  # a day the month lacks: dateparser has its own answers ("february" after 29 Feb 2024: 2028)
        return date(year, month, reference.day), "month"
    match = _fullmatch(_MONTH_DAY, expression)
    if match is not None:  # the nearest such day, the reference day counting as past
        month, of_month = _MONTHS[match.group("month")], int(match.group("day"))
        if of_month > calendar.monthrange(2023, month)[1]:
            return None  # 29 February (dateparser looks for a leap year) or no such day
        ahead = (month, of_month) > (reference.month, reference.day)
        if prefer == "past":
            return date(reference.year - 1 if ahead else reference.year, month, of_month), "day"
        return date(reference.year if ahead else reference.year + 1, month, of_month), "day"
    if _THIS_MONTH.fullmatch(expression):
        return NO_TIME
    match = _ANCHORED.fullmatch(expression)
    if match is not None:
        anchor, unit = match.group("anchor"), match.group("unit")
        if unit in WEEKDAYS:
            return _weekday(reference, WEEKDAYS[unit], anchor), "day"
        return _shift(reference, unit, {"last": -1, "this": 0, "next": 1}[anchor]), unit
    return None
