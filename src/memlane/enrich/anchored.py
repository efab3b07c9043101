"""Time spans anchored on a date: "the week before August 3, 2023", "the Sunday after 4 October 2023", "two weeks
before June 9, 2023", "the weekend before 17 July 2023".

Plain calendar arithmetic on the anchor's span (``temporal`` reads the date itself; dateparser reads none of these
phrases, it returns nothing for them). Without it, a question such as
"what did I do the week before August 3, 2023?" was read as "the weekend" or "Sunday" of the week the question was
asked, or as "before August" of the current year.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from memlane.enrich.relative import COUNT_WORDS, WEEKDAYS

_COUNTS: Final = {**COUNT_WORDS, "a couple of": 2, "a few": 3}
#: The length of a unit in days (a month and a year as their usual lengths: the span is a search window).
_DAYS: Final = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}

#: What comes before the anchor date: "(the|last|over the|on the) week|weekend|day|<weekday>" or "<count> <unit>s",
#: then "before|after|prior to|following". Groups: ``count``, ``units``, ``unit``, ``direction``.
PREFIX: Final = (
    r"(?:(?:the|last|over\s+the|on\s+the)\s+)?"
    r"(?:(?P<count>\d{1,2}|a\s+couple\s+of|a\s+few|" + "|".join(k for k in _COUNTS if " " not in k) + r")\s+"
    r"(?P<units>day|week|fortnight|month|year)s?"
    r"|(?P<unit>week|weekend|day|fortnight|month|year|" + "|".join(WEEKDAYS) + r"))"
    r"\s+(?P<direction>before|after|prior\s+to|following)"
)


def anchored_span(
    anchor_start: datetime,
    anchor_end: datetime,
    *,
    direction: str,
    unit: str | None = None,
    count: str | None = None,
    units: str | None = None,
) -> tuple[datetime, datetime, str]:
    """The span a phrase names relative to the anchor ``[anchor_start, anchor_end)``, and its granularity.

    "the week before D" is the seven days before D; "the weekend before D" the last Saturday and Sunday ending
    before D; "the Sunday before D" the last Sunday before D; "N weeks before D" the week that starts N weeks before
    D. "after" mirrors each from the end of D.
    """
    before = " ".join(direction.lower().split()) in ("before", "prior to")
    if count is not None and units is not None:
        n = int(count) if count.isdigit() else _COUNTS[" ".join(count.lower().split())]
        length = timedelta(days=_DAYS[units.lower()])
        if before:
            start = anchor_start - n * length
            return start, start + length, "range"
        start = anchor_end + (n - 1) * length
        return start, start + length, "range"
    name = (unit or "").lower()
    if name in WEEKDAYS:
        target = WEEKDAYS[name]
        if before:
            day = anchor_start - timedelta(days=1)
            day -= timedelta(days=(day.weekday() - target) % 7)
        else:
            day = anchor_end + timedelta(days=(target - anchor_end.weekday()) % 7)
        return day, day + timedelta(days=1), "day"
    if name == "weekend":
        if before:  # the Saturday of the last weekend that ends before the anchor
            saturday = anchor_start - timedelta(days=2)
            saturday -= timedelta(days=(saturday.weekday() - 5) % 7)
        else:
            saturday = anchor_end + timedelta(days=(5 - anchor_end.weekday()) % 7)
        return saturday, saturday + timedelta(days=2), "weekend"
    length = timedelta(days=_DAYS.get(name, 7))
    granularity = "day" if name == "day" else "range"
    if before:
        return anchor_start - length, anchor_start, granularity
    return anchor_end, anchor_end + length, granularity
