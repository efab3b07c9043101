"""Time expressions resolved against a fixed reference; spans are half-open UTC days, weeks, months, years."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane.enrich.temporal import OPEN_END, OPEN_START, TimeSpan, event_time, extract_times, query_time_range

# Wednesday 10 May 2023, mid-afternoon.
REF = datetime(2023, 5, 10, 14, 30, tzinfo=UTC)


def d(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def only(text: str, reference: datetime = REF) -> TimeSpan:
    spans = extract_times(text, reference)
    assert len(spans) == 1, spans
    return spans[0]


@pytest.mark.parametrize(
    ("text", "start", "end", "granularity"),
    [
        ("I went to a support group yesterday.", d(2023, 5, 9), d(2023, 5, 10), "day"),
        ("We hiked last Saturday.", d(2023, 5, 6), d(2023, 5, 7), "day"),
        ("I quit my job two weeks ago.", d(2023, 4, 24), d(2023, 5, 1), "week"),  # the Monday-week of 26 April
        ("We are moving next month.", d(2023, 6, 1), d(2023, 7, 1), "month"),
        ("In 2022 I lived in Berlin.", d(2022, 1, 1), d(2023, 1, 1), "year"),
        ("The week before last was rough.", d(2023, 4, 24), d(2023, 5, 1), "week"),
        ("Last week was busy.", d(2023, 5, 1), d(2023, 5, 8), "week"),
        ("I saw her last year.", d(2022, 1, 1), d(2023, 1, 1), "year"),
        ("Today is sunny.", d(2023, 5, 10), d(2023, 5, 11), "day"),
        ("See you tomorrow!", d(2023, 5, 11), d(2023, 5, 12), "day"),
        ("The day before yesterday I fell.", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("The day after tomorrow is her birthday.", d(2023, 5, 12), d(2023, 5, 13), "day"),
        ("We married on 8 May 2016.", d(2016, 5, 8), d(2016, 5, 9), "day"),
        ("It was May 3rd, 2021.", d(2021, 5, 3), d(2021, 5, 4), "day"),
        ("That was in May 2023.", d(2023, 5, 1), d(2023, 6, 1), "month"),
        ("The build is from 2023-04-30.", d(2023, 4, 30), d(2023, 5, 1), "day"),
        ("I adopted him three years ago.", d(2020, 1, 1), d(2021, 1, 1), "year"),
        ("We went camping last weekend.", d(2023, 5, 6), d(2023, 5, 8), "weekend"),
        ("I've trained over the past three weeks.", d(2023, 4, 19), d(2023, 5, 11), "range"),
        ("I started painting last August.", d(2022, 8, 1), d(2022, 9, 1), "month"),
        ("A few days ago I met Anna.", d(2023, 5, 7), d(2023, 5, 8), "day"),  # a vague count is read as 3
    ],
)
def test_relative_and_absolute_expressions(text: str, start: datetime, end: datetime, granularity: str) -> None:
    span = only(text)
    assert (span.start, span.end, span.granularity) == (start, end, granularity)
    assert span.text.lower() in text.lower()


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (datetime(2023, 5, 8, 9, tzinfo=UTC), d(2023, 5, 6)),  # Monday
        (datetime(2023, 5, 12, 9, tzinfo=UTC), d(2023, 5, 6)),  # Friday
        (datetime(2023, 5, 13, 9, tzinfo=UTC), d(2023, 5, 6)),  # Saturday: the previous one, not today
        (datetime(2023, 5, 14, 9, tzinfo=UTC), d(2023, 5, 13)),  # Sunday: yesterday
    ],
)
def test_last_saturday_on_different_weekdays(reference: datetime, expected: datetime) -> None:
    span = only("We went hiking last Saturday.", reference)
    assert span.start == expected
    assert span.end == d(expected.year, expected.month, expected.day + 1)


def test_abbreviated_days_after_an_anchor_word() -> None:
    # LoCoMo's "Last Fri I finally took my kids to a pottery workshop" was no time (and "Last Fri" a person)
    assert (only("Last Fri I finally took my kids out.").start, only("See you next Tues!").start) == (
        d(2023, 5, 5),
        d(2023, 5, 16),
    )
    assert only("On Sat we hiked.").start == d(2023, 5, 6)
    assert only("last Thurs was fun").start == d(2023, 5, 4)
    # words, not days: lower case, or without an anchor
    assert extract_times("we sat on sat and this sun is hot", REF) == []
    assert extract_times("The Sun was out.", REF) == []


def test_next_month_crosses_the_year() -> None:
    span = only("I'm moving next month.", datetime(2023, 12, 20, tzinfo=UTC))
    assert (span.start, span.end) == (d(2024, 1, 1), d(2024, 2, 1))


def test_bare_weekday_follows_the_tense() -> None:
    assert only("I went to the gym on Saturday.").start == d(2023, 5, 6)
    assert only("I'm going to the gym on Saturday.").start == d(2023, 5, 13)


def test_time_of_day_and_timezone_of_the_reference_do_not_matter_within_a_day() -> None:
    late = datetime(2023, 5, 10, 23, 59, tzinfo=UTC)
    early = datetime(2023, 5, 10, 0, 1, tzinfo=UTC)
    naive = datetime(2023, 5, 10, 12)
    assert only("yesterday", late).start == only("yesterday", early).start == only("yesterday", naive).start


@pytest.mark.parametrize(
    "text",
    [
        "I love painting sunsets.",
        "We may go there, who knows.",
        "I march to my own drum.",
        "I ran 2000 meters and paid $2020.",
        "I love Sundays.",
        "",
        "Ich war gestern mit Anna in München.",
        "我昨天去了北京。",
        "ذهبت إلى القاهرة أمس",
        "🎉🎂😀 ❤️",
    ],
)
def test_texts_without_english_time_words_give_nothing(text: str) -> None:
    assert extract_times(text, REF) == []
    assert event_time(text, REF) is None


def test_several_expressions_and_the_best_event_time() -> None:
    text = "Back in 2016, on 8 May 2016 to be exact, I married Tom."
    spans = extract_times(text, REF)
    assert [s.granularity for s in spans] == ["year", "day"]
    best = event_time(text, REF)
    assert best is not None
    assert best.start == d(2016, 5, 8)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I do in May 2023?", d(2023, 5, 1), d(2023, 6, 1)),
        ("What happened last year?", d(2022, 1, 1), d(2023, 1, 1)),
        ("Where did I travel in 2022?", d(2022, 1, 1), d(2023, 1, 1)),
        ("What did I eat yesterday?", d(2023, 5, 9), d(2023, 5, 10)),
        ("Where did I live before 2020?", OPEN_START, d(2020, 1, 1)),
        ("What changed after May 2021?", d(2021, 6, 1), OPEN_END),
        ("What have I read since 2019?", d(2019, 1, 1), OPEN_END),
        ("Which jobs did I have until June 2022?", OPEN_START, d(2022, 7, 1)),
        # a month followed by its day is a date, not "before <month>" of the reference's year
        ("What did she do before August 3, 2021?", OPEN_START, d(2021, 8, 3)),
        ("What changed after 3 August 2021?", d(2021, 8, 4), OPEN_END),
        # spans anchored on a date (the reference, 2023-05-10, plays no part)
        ("What did John do the week before August 3, 2021 with his kids?", d(2021, 7, 27), d(2021, 8, 3)),
        ("What did Mel do the weekend before 17 July 2021?", d(2021, 7, 10), d(2021, 7, 12)),  # 17 July: Saturday
        ("What did we do over the weekend before 4th October, 2021?", d(2021, 10, 2), d(2021, 10, 4)),
        ("What happened on the Sunday before 25 May 2021?", d(2021, 5, 23), d(2021, 5, 24)),
        ("What did they plan on the Saturday after October 28, 2021?", d(2021, 10, 30), d(2021, 10, 31)),
        ("What did I get two weeks before August 11, 2021?", d(2021, 7, 28), d(2021, 8, 4)),
        ("Where was I the day after 2021-05-08?", d(2021, 5, 9), d(2021, 5, 10)),
        ("What did I do three days before May 8, 2021?", d(2021, 5, 5), d(2021, 5, 6)),
        ("What did we do the week after June 9, 2021?", d(2021, 6, 10), d(2021, 6, 17)),
    ],
)
def test_query_time_range(query: str, start: datetime, end: datetime) -> None:
    span = query_time_range(query, REF)
    assert span is not None
    assert (span.start, span.end) == (start, end)


@pytest.mark.parametrize(
    "query",
    ["What did we do before the wedding?", "When did Caroline go to the support group?", "What is my dog's name?"],
)
def test_queries_without_a_date_have_no_range(query: str) -> None:
    assert query_time_range(query, REF) is None


def test_span_helpers() -> None:
    span = only("yesterday")
    assert span.contains(datetime(2023, 5, 9, 23, 59, tzinfo=UTC))
    assert not span.contains(datetime(2023, 5, 10, tzinfo=UTC))
    assert span.overlaps(only("this week"))
    assert not span.overlaps(only("last week"))
    assert not span.overlaps(only("next month"))


@pytest.mark.parametrize("text", ["It expires on 9999-12-31.", "the week of 9999-12-31", "from 9999-12-31 on"])
def test_a_date_whose_span_leaves_the_calendar_is_skipped_not_raised(text: str) -> None:
    # The day after 9999-12-31 is no ``date``: found in the vim manual's examples, it failed the whole add
    reference = datetime(2026, 1, 1, tzinfo=UTC)
    assert extract_times(text, reference) == []
    assert event_time(text, reference) is None


def test_a_text_naming_the_last_day_of_the_calendar_is_stored_with_its_facts() -> None:
    from memlane import Config, Memory
    from memlane.embedding.fake import HashEmbedder

    with Memory(":memory:", embedder=HashEmbedder(), config=Config(embedder="hash", infer=True)) as memory:
        added = memory.add("The licence key expires on 9999-12-31. I live in Oslo.", user_id="u")
        assert added.memories
        assert any("Oslo" in hit.memory.text for hit in memory.search("where do I live", user_id="u"))


@pytest.mark.parametrize("query", ["the week before 0001-01-01", "two weeks before 0001-01-01"])
def test_an_anchored_span_before_the_calendar_reads_as_before_its_anchor(query: str) -> None:
    span = query_time_range(f"What did I do {query}?", datetime(2026, 1, 1, tzinfo=UTC))
    assert span is not None and span.start == OPEN_START and span.end == datetime(1, 1, 1, tzinfo=UTC)
