"""The lexical dimension in PostgreSQL: BM25 from each user's read model, or computed in SQL over the generated
``tsvector`` column (GIN index keyed by user) for the filters the model does not serve; and the previous turn's
words kept beside each turn (the ``ctx`` column).

Which analysis a search uses: with no filters or "current only" (a search's default) the read model answers
(``memlane.store.hot``, kept current by ``hot_feed``), with words analysed as SQLite's FTS5 ``porter unicode61``
does (PyStemmer's Porter): the same scores as the SQLite store for the same memories, without a round trip. Any
other filter (a session, a kind, a time range, superseded memories) takes the SQL below, with PostgreSQL's own
analysis (its parser and its Snowball ``porter`` stemmer, the same algorithm): equal to the model's for plain words;
it differs for words of one or two letters and for addresses, URLs and decimals, which the two parsers split
differently (``tests/contract/test_congruence.py`` holds both paths to each other).

Why BM25 and not ``ts_rank_cd``: ``ts_rank_cd`` has no inverse document frequency (a match on a word every memory
has counts as much as one on a rare name) and saturates differently, so fused rankings would drift from the SQLite
store's. The score here is FTS5's ``bm25()`` formula with its constants (k1 = 1.2, b = 0.75, the context column at
weight 0.4, IDF floored at 1e-6) over per-user statistics (``text_stats``, kept by a trigger): one user's scores
never depend on another user's memories.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, ClassVar, Final

import psycopg

from memlane.models import Filters, MemoryItem, MemoryKind
from memlane.store.hot.rows import turn_label
from memlane.store.postgres.db import Database
from memlane.store.postgres.hot_feed import HotScopes
from memlane.store.postgres.rows import FILTERS, filter_sql, run
from memlane.store.sql.filters import FilterSQL
from memlane.store.sql.text import SQLTextIndex

# FTS5's bm25() constants, and the weight of the previous turn's words (as CONTEXT_WEIGHT in the SQLite store).
K1: Final = 1.2
B: Final = 0.75
CONTEXT_WEIGHT: Final = 0.4

# The query's lexemes, the user's collection statistics and each lexeme's IDF; then every matching memory of the
# user (GIN: user and lexemes) scored from its own tsvector (only the query's lexemes read). Each IDF is counted once
# (MATERIALIZED: never per matching row). ``{where}`` and ``{tail}`` are filled from constants.
_BM25: Final = f"""
WITH q AS (
    SELECT array_agg(DISTINCT u.lexeme) AS lexemes FROM unnest(to_tsvector('memlane', %(text)s)) u
), st AS (
    SELECT docs::float8 AS n, tokens::float8 / greatest(docs, 1) AS avgdl FROM text_stats WHERE user_id = %(user)s
), tq AS (
    SELECT (SELECT string_agg(quote_literal(x), ' | ') FROM unnest(q.lexemes) x)::tsquery AS query, q.lexemes FROM q
), df AS MATERIALIZED (
    SELECT l.lexeme, greatest(ln((0.5 + st.n - h.n) / (0.5 + h.n)), 1e-6) AS idf
    FROM q CROSS JOIN st CROSS JOIN LATERAL unnest(q.lexemes) l (lexeme) CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS n FROM memories d
        WHERE d.user_id = %(user)s AND d.tsv @@ quote_literal(l.lexeme)::tsquery
    ) h
)
SELECT m.id, sum(df.idf * t.tf * {K1 + 1}::float8 / (t.tf + {K1}::float8 * ({1 - B}::float8 + {B}::float8 * m.doclen / st.avgdl))) AS s
FROM memories m CROSS JOIN st CROSS JOIN tq
CROSS JOIN LATERAL (
    SELECT u.lexeme, coalesce(cardinality(array_positions(u.weights, 'A')), 0)
        + {CONTEXT_WEIGHT}::float8 * coalesce(cardinality(array_positions(u.weights, 'B')), 0) AS tf
    FROM unnest(m.tsv) u WHERE u.lexeme = ANY(tq.lexemes)
) t
JOIN df ON df.lexeme = t.lexeme
WHERE m.user_id = %(user)s AND m.tsv @@ tq.query AND {{where}}
GROUP BY m.pk, m.id
{{tail}}
"""


def _params(user_id: str, terms: Sequence[str], where_params: list[Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"user": user_id, "text": " ".join(terms)}
    params.update({f"f{i}": v for i, v in enumerate(where_params)})
    return params


def _named(where: str, n: int) -> str:
    """``where`` with its ``%s`` placeholders renamed ``%(f0)s``, ``%(f1)s``... (the query uses named ones)."""
    parts = where.split("%s")
    assert len(parts) == n + 1
    return "".join(p + (f"%(f{i})s" if i < n else "") for i, p in enumerate(parts))


def previous_turn(c: psycopg.Connection[Any], item: MemoryItem) -> str:
    """The text of the turn before ``item`` in its session (indexed beside it, as in the SQLite store)."""
    if item.kind != MemoryKind.MESSAGE or not item.position:
        return ""
    row = run(
        c,
        "SELECT text, role, speaker FROM memories WHERE user_id = %s AND session_id IS NOT DISTINCT FROM %s "
        "AND position = %s AND kind = 'message'",
        (item.user_id, item.session_id, item.position - 1),
    ).fetchone()
    # only a reply (another role or speaker) takes it: ``turn_label``
    return str(row[0]) if row and turn_label(row[1], row[2]) != turn_label(item.role, item.speaker) else ""


def turn_of(c: psycopg.Connection[Any], pk: int) -> tuple[str, str | None, int] | None:
    """(user, session, position) of a row that is a turn of a conversation, else None."""
    row = run(
        c,
        "SELECT user_id, session_id, position FROM memories WHERE pk = %s AND kind = 'message' "
        "AND position IS NOT NULL",
        (pk,),
    ).fetchone()
    return None if row is None else (str(row[0]), row[1], int(row[2]))


def refresh_next_context(c: psycopg.Connection[Any], turn: tuple[str, str | None, int] | None) -> None:
    """Rebuild the context of the turn after ``turn`` from the rows as they are now (in the caller's transaction)."""
    if turn is None:
        return
    user_id, session_id, position = turn
    turns = (
        "SELECT pk, text, role, speaker FROM memories WHERE user_id = %s AND session_id IS NOT DISTINCT FROM %s "
        "AND position = %s AND kind = 'message'"
    )
    here = run(c, turns, (user_id, session_id, position)).fetchone()
    for pk, _, role, speaker in run(c, turns, (user_id, session_id, position + 1)).fetchall():
        reply = here is not None and turn_label(here[2], here[3]) != turn_label(role, speaker)  # ``turn_label``
        run(c, "UPDATE memories SET ctx = %s WHERE pk = %s", (str(here[1]) if here is not None and reply else "", pk))


class PostgresTextIndex(SQLTextIndex[HotScopes]):
    """BM25 over one user's memories: from the user's read model (``hot_feed``) when the filters are none or
    "current only" (its words analysed as FTS5's porter unicode61, as in the SQLite store), else in SQL over the
    ``tsvector``, confined to the user by the index key and every query's condition.
    """

    _db: Database
    _hot: HotScopes
    _filters: ClassVar[FilterSQL] = FILTERS

    def _text_search_sql(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> builtins.list[tuple[str, float]]:
        where, wparams = filter_sql(filters)
        params = _params(user_id, terms, wparams)
        tail = "ORDER BY s DESC, m.pk"
        if limit is not None:
            tail += " LIMIT %(limit)s"
            params["limit"] = int(limit)
        sql = _BM25.replace("{where}", _named(where, len(wparams))).replace("{tail}", tail)
        return [(str(i), float(s)) for i, s in self._db.read(sql, params, scope=user_id)]

    def _text_scores_sql(
        self, user_id: str, terms: Sequence[str], memory_ids: Sequence[str], filters: Filters
    ) -> dict[str, float]:
        where, wparams = filter_sql(filters)
        params = _params(user_id, terms, wparams)
        params["ids"] = list(dict.fromkeys(memory_ids))
        sql = _BM25.replace("{where}", f"m.id = ANY(%(ids)s) AND {_named(where, len(wparams))}").replace("{tail}", "")
        return {str(i): float(s) for i, s in self._db.read(sql, params, scope=user_id)}
