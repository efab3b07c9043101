"""The data migration of the text index's previous-turn column (``0020_reply_context`` in SQLite,
``0013_reply_context`` in PostgreSQL): a store written before the reply-only rule is opened by this memlane and its
entries follow the rule, on the SQL full-text path too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import memlane.store.sql.turn_context as turn_context
from memlane import Config, Memory, Message
from memlane.embedding.fake import HashEmbedder

SINCE = {"since": datetime(2000, 1, 1, tzinfo=UTC)}  # a filter the read model does not serve: the SQL text path

DOCS = ["The quixotrel valve sits on the left.", "Clean the filter every month.", "Replace the gasket every year."]
CHAT = [
    Message(role="user", name="Ana", content="Where does the zorblat go?"),
    Message(role="assistant", content="Under the sink, next to the pipe."),
    Message(role="assistant", content="Anything else today?"),  # the same role twice: no context
]
PAINT = [
    Message(role="user", name="Ana", content="I painted a sunset."),
    Message(role="user", name="ANA", content="It took a week."),  # the same speaker (casefolded) twice: no context
    Message(role="user", name="Ben", content="Lovely colours."),  # another speaker: a reply
]
# The context each text's entry holds by the current rule.
EXPECTED = {
    "The quixotrel valve sits on the left.": "",
    "Clean the filter every month.": "",
    "Replace the gasket every year.": "",
    "Where does the zorblat go?": "",
    "Under the sink, next to the pipe.": "Where does the zorblat go?",
    "Anything else today?": "",
    "I painted a sunset.": "",
    "It took a week.": "",
    "Lovely colours.": "It took a week.",
}


def _fill(m: Memory) -> None:
    m.add(DOCS, user_id="docs")  # documents added together by one author, without a session
    m.add(CHAT, user_id="chat", session_id="s1")
    m.add(PAINT, user_id="chat", session_id="s2")


def _check_searches(m: Memory) -> None:
    for filters in (None, SINCE):
        docs = m.search("quixotrel", user_id="docs", preset_name="bm25", filters=filters)
        assert [h.memory.text for h in docs] == [DOCS[0]], filters  # not its neighbour, by the neighbour's words
        paint = m.search("sunset", user_id="chat", preset_name="bm25", filters=filters)
        assert [h.memory.text for h in paint] == ["I painted a sunset."], filters
        reply = m.search("zorblat", user_id="chat", preset_name="bm25", filters=filters)
        assert {h.memory.text for h in reply} == {CHAT[0].content, CHAT[1].content}, filters


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(data_dir=tmp_path / "home", embedder="hash", infer=False)


@pytest.fixture(params=[None, 2])
def batch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int | None:
    """The migration's batch size: its default, and 2 rows (every batch boundary falls between turns)."""
    if request.param is not None:
        monkeypatch.setattr(turn_context, "BATCH", request.param)
    return request.param


# -- SQLite -------------------------------------------------------------------------------------------------------


def _sqlite_contexts(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT m.text, f.ctx FROM memories m JOIN memories_fts f ON f.rowid = m.pk").fetchall()
    return {str(t): str(c) for t, c in rows}


def _sqlite_as_before(path: Path) -> None:
    """The entries as memlane wrote them before the rule (any previous message's text), at the schema before it."""
    from memlane.store.sqlite.schema import MIGRATIONS

    with sqlite3.connect(path) as conn:
        conn.execute(dict(MIGRATIONS)["0006_fts_context_refresh"])  # the old rule, as that migration spells it
        conn.execute("DELETE FROM migrations WHERE name = '0020_reply_context'")
        stale = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'quixotrel'").fetchone()[0]
    assert stale == 2  # the document and, through its context, the next one


def test_sqlite_store_from_before_the_rule_is_migrated(tmp_path: Path, config: Config, batch: int | None) -> None:
    path = tmp_path / "old.db"
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        _fill(m)
    assert _sqlite_contexts(path) == EXPECTED  # what the write path gives today
    _sqlite_as_before(path)
    assert _sqlite_contexts(path)["Clean the filter every month."] == DOCS[0]
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        assert _sqlite_contexts(path) == EXPECTED
        _check_searches(m)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM migrations WHERE name = '0020_reply_context'").fetchone()[0] == 1


def test_sqlite_qdrant_local_store_is_migrated_through_its_sqlite_file(tmp_path: Path, config: Config) -> None:
    """Qdrant keeps vectors only: the text index and its context column live in the SQLite file."""
    pytest.importorskip("qdrant_client", reason="memlane[qdrant] is not installed: pip install -e '.[dev]'")
    path = tmp_path / "store.db"
    url = f"sqlite:///{path}?vectors=qdrant+local"
    with Memory(url, embedder=HashEmbedder(), config=config) as m:
        _fill(m)
    _sqlite_as_before(path)
    with Memory(url, embedder=HashEmbedder(), config=config) as m:
        assert _sqlite_contexts(path) == EXPECTED
        _check_searches(m)


def test_sqlite_migration_keeps_entries_that_follow_the_rule_and_refills_a_reply(
    tmp_path: Path, config: Config
) -> None:
    """An entry is rewritten only where it differs; a reply whose context was lost takes its previous turn again."""
    path = tmp_path / "lost.db"
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        _fill(m)
    with sqlite3.connect(path) as conn:
        entry = "UPDATE memories_fts SET ctx = ? WHERE rowid = (SELECT pk FROM memories WHERE text = ?)"
        conn.execute(entry, ("stale words", "Lovely colours."))
        conn.execute(entry, ("", CHAT[1].content))
        conn.execute("DELETE FROM migrations WHERE name = '0020_reply_context'")
    with Memory(path, embedder=HashEmbedder(), config=config):
        assert _sqlite_contexts(path) == EXPECTED


# -- PostgreSQL -----------------------------------------------------------------------------------------------------


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """A new, empty database on the test server (dropped afterwards)."""
    from tests.pg_server import fresh_database_url

    with fresh_database_url() as url:
        yield url


# The rule before replies: any previous message's text (as the SQLite store's 0006 spells it).
_PG_OLD_RULE = """
UPDATE memories m SET ctx = coalesce((
    SELECT p.text FROM memories p WHERE p.user_id = m.user_id AND p.session_id IS NOT DISTINCT FROM m.session_id
        AND p.position = m.position - 1 AND m.kind = 'message' AND p.kind = 'message' ORDER BY p.pk LIMIT 1
), '')
"""


def _pg_contexts(url: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {str(t): str(c) for t, c in conn.execute("SELECT text, ctx FROM memories").fetchall()}


def _pg_stats(url: str) -> list[tuple[str, int, int]]:
    """BM25's per-user statistics as kept by the trigger, beside the same counted from the rows."""
    import psycopg

    with psycopg.connect(url) as conn:
        kept = conn.execute("SELECT user_id, docs, tokens FROM text_stats ORDER BY user_id").fetchall()
        counted = conn.execute(
            "SELECT user_id, count(*), sum(doclen) FROM memories GROUP BY user_id ORDER BY user_id"
        ).fetchall()
    assert [tuple(r) for r in kept] == [tuple(r) for r in counted]
    return [(str(u), int(d), int(t)) for u, d, t in kept]


def test_postgres_store_from_before_the_rule_is_migrated(
    fresh_database: str, config: Config, batch: int | None
) -> None:
    import psycopg

    with Memory(fresh_database, embedder=HashEmbedder(), config=config) as m:
        _fill(m)
    assert _pg_contexts(fresh_database) == EXPECTED
    now = _pg_stats(fresh_database)
    with psycopg.connect(fresh_database) as conn:
        conn.execute(_PG_OLD_RULE)
        conn.execute("DELETE FROM migrations WHERE name = '0013_reply_context'")
    assert _pg_contexts(fresh_database)["Clean the filter every month."] == DOCS[0]
    assert _pg_stats(fresh_database) != now  # the copied words counted in the documents' lengths
    with Memory(fresh_database, embedder=HashEmbedder(), config=config) as m:
        assert _pg_contexts(fresh_database) == EXPECTED
        assert _pg_stats(fresh_database) == now
        _check_searches(m)
    with psycopg.connect(fresh_database) as conn:
        row = conn.execute("SELECT count(*) FROM migrations WHERE name = '0013_reply_context'").fetchone()
        assert row is not None and row[0] == 1


# The pipelined add before ``0014_reply_context_casefold``: the previous turn's speaker compared with SQL's lower().
_PG_LOWER_RULE = """
UPDATE memories m SET ctx = coalesce((
    SELECT p.text FROM memories p WHERE p.user_id = m.user_id AND p.session_id IS NOT DISTINCT FROM m.session_id
        AND p.position = m.position - 1 AND m.kind = 'message' AND p.kind = 'message'
        AND (coalesce(p.role, '') <> coalesce(m.role, '') OR lower(coalesce(p.speaker, '')) <> %s)
    ORDER BY p.pk LIMIT 1
), '') WHERE m.speaker = %s
"""


def test_postgres_entries_written_by_lower_are_rewritten_by_casefold(fresh_database: str, config: Config) -> None:
    import psycopg

    turns = [Message(role="user", name="Straße", content="I fixed the gate."), *PAINT]
    turns.insert(1, Message(role="user", name="STRASSE", content="It squeaked for years."))  # one speaker: no context
    with Memory(fresh_database, embedder=HashEmbedder(), config=config) as m:
        m.add(turns, user_id="chat", session_id="s3")
    assert _pg_contexts(fresh_database)["It squeaked for years."] == ""
    with psycopg.connect(fresh_database) as conn:
        conn.execute(_PG_LOWER_RULE, ("STRASSE".casefold(), "STRASSE"))  # lower('Straße') is 'straße': a "reply"
        conn.execute("DELETE FROM migrations WHERE name = '0014_reply_context_casefold'")
    assert _pg_contexts(fresh_database)["It squeaked for years."] == "I fixed the gate."
    with Memory(fresh_database, embedder=HashEmbedder(), config=config) as m:
        assert _pg_contexts(fresh_database)["It squeaked for years."] == ""
        found = m.search("gate", user_id="chat", preset_name="bm25", filters=SINCE)
        assert [h.memory.text for h in found] == ["I fixed the gate."]
