"""Query analysis: exact-match terms (positives and negatives), entities, time constraints, question shape."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from memlane.enrich.aliases import EntityResolver
from memlane.retrieval.query import QueryFeatures, analyse_query, exact_match_terms, resolve_relations

NOW = datetime(2023, 6, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Why does ERR_CONN_RESET_42 happen?", ["ERR_CONN_RESET_42"]),
        ("error E1234 at address 0x1F", ["E1234", "0x1F"]),
        ("where is config.yaml?", ["config.yaml"]),
        ("did I update README.md or deploy_v2.sh", ["README.md", "deploy_v2.sh"]),
        ("what did I say about getUserById", ["getUserById"]),
        ("the HttpClient class", ["HttpClient"]),
        ("raise MAX_RETRIES", ["MAX_RETRIES"]),
        ("my_var is null", ["my_var"]),
        ("upgrade to Python 3.12", ["3.12"]),
        ("we released v2.0.1 today", ["v2.0.1"]),
        ("the 2.0.1 build", ["2.0.1"]),
        ("see https://example.com/a?b=1.", ["https://example.com/a?b=1"]),
        ("open /etc/hosts or ~/notes/todo.md", ["/etc/hosts", "~/notes/todo.md"]),
        ("src/memlane/enrich/temporal.py failed", ["src/memlane/enrich/temporal.py"]),
        ('search for "blue widget"', ["blue widget"]),
        ("what was the `--no-cache` flag", ["--no-cache"]),
        ("run os.path.join()", ["os.path.join()"]),
        ("C:\\Users\\me\\file.txt", ["C:\\Users\\me\\file.txt"]),
    ],
)
def test_exact_match_terms_positive(text: str, expected: list[str]) -> None:
    assert exact_match_terms(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "What did Caroline do in May 2023?",
        "How many kids does Melanie have?",
        "When did Mel paint a sunrise?",
        "Did she visit NASA at 3pm in 2019?",
        "I ran 3.5 miles on the 2nd",
        "I paid $12.50 for 2 tickets",
        "We met McDonald at the 5km race",
        "he/she and/or them",
        "I'm 30 years old, it was covid-19 time, a 3-year-old kid",
        "Caroline's and Mel's plans for the weekend",
        "What's her favorite book? It's fun.Then we left",
        "Where did I go on vacation in the 1990s?",
        "她昨天去了北京 😀",
        "Ich habe am Samstag Anna getroffen",
        "هل ذهبت إلى القاهرة؟",
        "🎉🎂😀",
        "",
    ],
)
def test_exact_match_terms_negative(text: str) -> None:
    assert exact_match_terms(text) == []


def test_a_chat_question() -> None:
    features = analyse_query("When did Caroline go to the LGBTQ support group?", NOW)
    assert features.exact_terms == []
    assert not features.has_exact_terms
    assert features.wants_time
    assert not features.is_counting
    assert features.time_range is None
    assert features.terms == ["caroline", "lgbtq", "support", "group"]
    assert "caroline" in features.entity_keys
    assert features.category is None
    assert features.intent is None


def test_counting_with_a_time_constraint() -> None:
    features = analyse_query("How many times did Mel go camping last year?", NOW)
    assert features.is_counting
    assert not features.wants_time
    assert features.time_range is not None
    assert features.time_range.start == datetime(2022, 1, 1, tzinfo=UTC)
    assert features.time_range.end == datetime(2023, 1, 1, tzinfo=UTC)
    assert "mel" in features.entity_keys


@pytest.mark.parametrize(
    "query",
    [
        "What year did I move?",
        "How long ago did she start?",
        "when was the wedding",
        "Which month was the trip?",
        "When Jon has lost his job as a banker?",  # LoCoMo's phrasing: no other question word
        "When?",
    ],
)
def test_wants_time(query: str) -> None:
    assert analyse_query(query, NOW).wants_time


@pytest.mark.parametrize(
    "query",
    [
        # an opening "when" clause is a condition when another question word says what is asked
        "When I enable folding by setting the 'foldmethod' option, all the folds are closed. How do I prevent this?",
        "When I was studying in the library, I read a novel. What was its name?",
        "When I use my arrow keys, Vim inserts weird characters. Why?",
    ],
)
def test_an_opening_when_clause_does_not_ask_when(query: str) -> None:
    assert not analyse_query(query, NOW).wants_time


@pytest.mark.parametrize("query", ["How often do I run?", "how much did it cost", "the number of books I read"])
def test_counting(query: str) -> None:
    assert analyse_query(query, NOW).is_counting


def test_known_entities_are_found_even_lower_case() -> None:
    features = analyse_query("what did anna schmidt say about pepper", NOW, known_entities=["Anna Schmidt", "pepper"])
    keys = features.entity_keys
    assert "anna schmidt" in keys
    assert "pepper" in keys
    found = {m.text: (m.start, m.end) for m in features.entities}
    assert found["anna schmidt"] == (9, 21)


def test_exact_terms_flag_keyword_weight() -> None:
    assert analyse_query("what broke in deploy_v2.sh?", NOW).has_exact_terms


def test_category_and_intent_are_left_for_the_planner() -> None:
    features = analyse_query("Where did I travel?", NOW)
    filled = dataclasses.replace(features, category="travel", intent="question")
    assert isinstance(filled, QueryFeatures)
    assert (filled.category, filled.intent, filled.terms) == ("travel", "question", features.terms)


@pytest.mark.parametrize(
    "query", ["她昨天去了北京吗？", "Was hat Anna gestern gemacht?", "ماذا فعلت أمس؟", "😀❓", "", "   "]
)
def test_non_english_and_emoji_do_not_crash(query: str) -> None:
    features = analyse_query(query, NOW, known_entities=["Anna"])
    assert features.text == query
    assert features.exact_terms == []


@pytest.mark.parametrize(
    ("query", "term"),
    [
        ("what does --no-cache-dir do?", "--no-cache-dir"),
        ("which branch fixes #482?", "#482"),
        ("which region is s3://acme-logs in?", "s3://acme-logs"),
        ("how do I fix HTTP 503 from the gateway?", "HTTP 503"),
        ("which Node version, 20.x?", "20.x"),
        ("when did we see OOMKilled on the pod?", "OOMKilled"),
    ],
)
def test_more_kinds_of_exact_terms(query: str, term: str) -> None:
    assert term in exact_match_terms(query)


@pytest.mark.parametrize("query", ["We had 3 kids and #1 fan club", "I ran -- well, walked -- 5km", "Is it 20 or 30?"])
def test_chat_punctuation_is_not_an_exact_term(query: str) -> None:
    assert exact_match_terms(query) == []


# -- relational references resolved from the user's side -----------------------------------------------------------
def test_relations_in_a_query_are_the_users() -> None:
    resolver = EntityResolver()
    resolver.observe("My sister Anna is a nurse and my dog Rex loves her.", "Maya", "user")
    resolver.observe("My son Leo plays chess.", "Jo", "user")
    for query in ("what does my sister do?", "what does your sister do?", "what does the user's sister do?"):
        features = analyse_query(query, NOW)
        assert list(resolve_relations(features, resolver).values()) == ["anna"], query
    assert resolve_relations(analyse_query("how old is my dog?", NOW), resolver) == {"my dog": "rex"}
    assert resolve_relations(analyse_query("does my boss like me?", NOW), resolver) == {"my boss": "my boss"}
    assert resolve_relations(analyse_query("what does Jo do with his son?", NOW), resolver) == {"his son": "leo"}
    assert resolve_relations(analyse_query("what does Anna do?", NOW), resolver) == {}


def test_a_known_function_word_is_no_mention() -> None:
    # a store written before the entity rules dropped them may hold "to" and "using" as entities
    query = "I am using Vim to edit HTML files"
    features = analyse_query(query, NOW, known_entities=["to", "using", "with", "Vim"])
    assert features.entity_keys == ["vim", "html"]
