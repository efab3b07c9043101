"""The common relative time phrases ("yesterday", "3 weeks ago", "last friday") read directly, as dateparser reads them.

dateparser costs about a millisecond a phrase; these few shapes make up nearly all the time phrases of conversation,
and their arithmetic is plain calendar arithmetic. Each answer is the day and period dateparser gives for the same
normalised phrase, reference day and preference (``tests/unit/test_relative_time.py`` compares the two over every
shape and a spread of reference days); anything else is left to dateparser (``None`` here).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta
from typing import Final, Literal

Prefer = Literal["past", "future"]

_WEEKDAYS: Final = {
    name: index
    for index, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
#: Count words dateparser reads as numbers in "<count> <unit> ago" and "in <count> <unit>".
_COUNT_WORDS: Final = {
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
_COUNT: Final = r"(?P<count>[1-9]\d?|" + "|".join(_COUNT_WORDS) + ")"
_UNIT: Final = r"(?P<unit>day|week|fortnight|month|year)s?"
_AGO: Final = re.compile(rf"{_COUNT} {_UNIT} ago")
_IN: Final = re.compile(rf"in {_COUNT} {_UNIT}")
_ANCHORED: Final = re.compile(r"(?P<anchor>last|this|next) (?P<unit>week|month|year|" + "|".join(_WEEKDAYS) + ")")

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


def resolve_relative(expression: str, reference: date, prefer: Prefer) -> tuple[date, str] | None:
    """The day and period dateparser gives a normalised relative ``expression`` at ``reference``; None when the
    expression is not one of the shapes read here (then ask dateparser).

    A day outside the calendar (before year 1 or after 9999) is left to dateparser as well.
    """
    try:
        return _resolve(expression, reference, prefer)
    except (ValueError, OverflowError):
        return None


def _resolve(expression: str, reference: date, prefer: Prefer) -> tuple[date, str] | None:
    offset = _DAY_WORDS.get(expression)
    if offset is not None:
        return reference + timedelta(days=offset), "day"
    weekday = _WEEKDAYS.get(expression)
    if weekday is not None:  # a bare weekday: the nearest one strictly before (or after) the reference day
        return _weekday(reference, weekday, "last" if prefer == "past" else "next"), "day"
    match = _AGO.fullmatch(expression) or _IN.fullmatch(expression)
    if match is not None:
        count_text = match.group("count")
        count = _COUNT_WORDS.get(count_text) or int(count_text)
        unit = match.group("unit")
        sign = -1 if expression.endswith(" ago") else 1
        return _shift(reference, unit, sign * count), _PERIOD[unit]
    match = _ANCHORED.fullmatch(expression)
    if match is not None:
        anchor, unit = match.group("anchor"), match.group("unit")
        if unit in _WEEKDAYS:
            return _weekday(reference, _WEEKDAYS[unit], anchor), "day"
        return _shift(reference, unit, {"last": -1, "this": 0, "next": 1}[anchor]), unit
    return None
