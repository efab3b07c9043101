"""The relative time phrases read directly give dateparser's day and period for every shape they accept."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import get_args

import pytest

from memlane.enrich.relative import (
    _DAY_WORDS,
    _MONTHS,
    COUNT_WORDS,
    NO_TIME,
    WEEKDAYS,
    Prefer,
    resolve_relative,
)
from memlane.enrich.temporal import _parse, _parse_dateparser

PREFERS: tuple[Prefer, ...] = get_args(Prefer)
UNITS = ("day", "week", "fortnight", "month", "year")
# Month ends, leap days and year ends are where calendar arithmetic goes wrong; the rest spans every weekday.
EDGE_DAYS = [
    date(2023, 1, 31),
    date(2023, 2, 28),
    date(2024, 2, 29),
    date(2023, 3, 31),
    date(2023, 12, 31),
    date(2024, 1, 1),
    date(2023, 8, 31),
    *(date(2023, 5, 8) + timedelta(days=i) for i in range(7)),
]
FIXED = [
    *_DAY_WORDS,
    *_MONTHS,
    *(f"in {month}" for month in _MONTHS),
    *(f"this {month}" for month in _MONTHS),
    *(f"{month} {day}" for month in _MONTHS for day in (1, 28)),
    *(f"{month} {day}" for month in _MONTHS for day in ("1st", "2nd", "3rd", "28th")),
    *(f"{day} {month}" for month in _MONTHS for day in ("1", "2nd", "28th")),
    *(f"{month} {day}" for month in ("may", "june") for day in ("1th", "2st", "3nd", "4rd")),  # odd suffixes too
    *(f"{prefix}{year}" for prefix in ("", "in ") for year in (1950, 1984, 2023, 2024, 2049)),
    *WEEKDAYS,
    *(f"{anchor} {unit}" for anchor in ("last", "this", "next") for unit in ("week", "month", "year", *WEEKDAYS)),
]


# Dates with their year, as questions write them ("may 8, 2022", "16 june, 2023", "in march 2023").
DATED = [
    *(f"{prefix}{month} {year}" for prefix in ("", "in ") for month in _MONTHS for year in (1950, 2023, 2024, 2049)),
    *(
        f"{month} {day}{comma} {year}"
        for month in _MONTHS
        for day in (1, 28)
        for comma in ("", ",")
        for year in (2022, 2024)
    ),
    *(
        f"{day} {month}{comma} {year}"
        for month in _MONTHS
        for day in (1, 28)
        for comma in ("", ",")
        for year in (2022, 2024)
    ),
    *(f"{month} {day}, 2024" for month in _MONTHS for day in (29, 30, 31)),  # ends of months, a leap year's too
    *(f"{day} {month} 2023" for month in _MONTHS for day in (29, 30, 31)),
    *(f"{month} {day}, 2023" for month in _MONTHS for day in ("1st", "22nd", "23rd", "30th", "31st")),
    *(f"{day} {month}{comma} 2024" for month in _MONTHS for day in ("8th", "29th") for comma in ("", ",")),
]


def _counted(counts: list[str]) -> list[str]:
    return [
        phrase
        for count in counts
        for unit in UNITS
        for plural in ("", "s")
        for phrase in (f"{count} {unit}{plural} ago", f"in {count} {unit}{plural}")
    ]


def _one_counted(words: list[str]) -> list[str]:
    """A window's count word after "1 ", as ``temporal._resolve`` writes "over the last two days"."""
    return [f"1 {word} {unit}{plural} ago" for word in words for unit in UNITS for plural in ("", "s")]


def _assert_same(phrases: list[str], days: list[date]) -> None:
    mismatches = []
    for day in days:
        for phrase in phrases:
            for prefer in PREFERS:
                direct = resolve_relative(phrase, day, prefer)
                if direct is None:  # only a month the reference day does not fit in, or a day the month lacks
                    dated = phrase[-4:].isdigit() and _parse_dateparser(phrase, day, prefer) is None
                    assert dated or (phrase.removeprefix("in ") in _MONTHS and day.day > 28), (phrase, day)
                    continue
                wanted = _parse_dateparser(phrase, day, prefer)
                if (None if direct == NO_TIME else direct) != wanted:
                    mismatches.append((phrase, day, prefer, direct, wanted))
    assert not mismatches, mismatches[:5]


def test_fixed_phrases_match_dateparser_on_edge_days() -> None:
    _assert_same(FIXED, [date(2024, 2, 29), date(2023, 12, 31), date(2023, 5, 12)])


def test_dated_phrases_match_dateparser_on_edge_days() -> None:
    _assert_same(DATED, [date(2024, 2, 29), date(2023, 12, 31), date(2023, 5, 12), date(2023, 4, 30)])


def test_counted_phrases_match_dateparser() -> None:
    counts = ["a", "an", "two", "twelve", "1", "13", "99"]
    days = [date(2023, 1, 31), date(2024, 2, 29)]
    _assert_same(_counted(counts) + _one_counted(["a", "two", "twelve"]), days)


def test_every_year_matches_dateparser() -> None:
    years = [f"{prefix}{year}" for prefix in ("", "in ") for year in range(1950, 2050)]
    _assert_same(years, [date(2024, 2, 29)])


def test_other_phrases_are_left_to_dateparser() -> None:
    day = date(2023, 5, 8)
    for phrase in (
        "the 8th of may",
        "february 29",
        "june 31",
        "0 days ago",
        "100 days ago",
        "05 days ago",
        "1 2 days ago",
    ):
        assert resolve_relative(phrase, day, "past") is None
        assert _parse(phrase, day, "past") == _parse_dateparser(phrase, day, "past")
    # dateparser's own answer for a month without the reference's day: the next February with a 29th
    assert resolve_relative("february", date(2024, 2, 29), "future") is None
    assert _parse("february", date(2024, 2, 29), "future") == (date(2028, 2, 29), "month")


def test_parse_prefers_the_direct_reading() -> None:
    assert _parse("3 weeks ago", date(2023, 5, 8), "past") == (date(2023, 4, 17), "week")
    assert _parse("last friday", date(2023, 5, 12), "future") == (date(2023, 5, 5), "day")


@pytest.mark.slow
def test_every_shape_matches_dateparser_over_many_days() -> None:
    rng = random.Random(0)
    days = EDGE_DAYS + [date(1995, 1, 1) + timedelta(days=rng.randrange(20_000)) for _ in range(6)]
    _assert_same(_counted([*COUNT_WORDS, *map(str, range(1, 100))]) + _one_counted(list(COUNT_WORDS)), days)
    _assert_same(FIXED, [date(2023, 6, 1) + timedelta(days=i) for i in range(400)])  # a leap February in it
    years = [f"{prefix}{year}" for prefix in ("", "in ") for year in range(1950, 2050)]
    _assert_same(years, EDGE_DAYS)
    month_days = [f"{month} {day}" for month in _MONTHS for day in range(1, 29)]
    month_days += [f"{day}th {month}" for month in _MONTHS for day in range(4, 21)]
    _assert_same(month_days, EDGE_DAYS)
    _assert_same(DATED, EDGE_DAYS)
    every_day = [f"{month} {day}, {year}" for year in (2023, 2024) for month in _MONTHS for day in range(1, 32)]
    _assert_same(every_day, [date(2024, 2, 29)])
