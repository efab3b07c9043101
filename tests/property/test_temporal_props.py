"""Time expressions anywhere in the calendar, and at its ends, resolve or are skipped: never an exception.

Found in the vim manual: "9999-12-31" made the day after it, which ``date`` cannot hold, and failed the whole add.
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.enrich.temporal import event_time, extract_times, query_time_range

FORMATS = ["{y:04d}-{m:02d}-{d:02d}", "{month} {d}, {y}", "{d} {month} {y}", "{month} {y}", "{y}", "{d}/{m}/{y}"]
FRAMES = [
    "It happened on {x}.",
    "What did I do the week before {x}?",
    "two weeks after {x}",
    "the Sunday after {x}",
    "before {x}",
    "since {x}",
    "in {x}",
    "the month after {x} and the year before {x}",
    "Between {x} and {x} we moved.",
]


@st.composite
def dates(draw: st.DrawFn) -> str:
    if draw(st.booleans()):  # the calendar's ends, where a span's other end leaves it
        y, m = draw(st.sampled_from([1, 2, 9998, 9999])), draw(st.sampled_from([1, 12]))
        d = draw(st.sampled_from([1, calendar.monthrange(y, m)[1]]))
    else:
        y, m = draw(st.integers(1, 9999)), draw(st.integers(1, 12))
        d = draw(st.integers(1, calendar.monthrange(y, m)[1]))
    text = draw(st.sampled_from(FORMATS)).format(y=y, m=m, d=d, month=calendar.month_name[m])
    return draw(st.sampled_from(FRAMES)).format(x=text)


@settings(max_examples=300)
@given(
    dates(),
    st.sampled_from(
        [datetime(1000, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC), datetime(8999, 12, 31, tzinfo=UTC)]
    ),
)
def test_any_date_resolves_or_is_skipped(text: str, reference: datetime) -> None:
    spans = extract_times(text, reference)
    assert all(span.start <= span.end for span in spans)
    best = event_time(text, reference)
    assert (best is None) == (not spans)
    asked = query_time_range(text, reference)
    assert asked is None or asked.start <= asked.end
