"""Structured questions in PostgreSQL: the shared statements (``memlane.store.sql.structured``), their word groups
matched by the text index.

Each word is analysed as the memories were (``phraseto_tsquery`` over the ``memlane`` configuration, from a bound
value, so never parsed as query syntax), a group is the OR of its words' queries, and the memory's own words (not
the previous turn's) must match every group.
"""

from __future__ import annotations

from typing import Any, ClassVar

from memlane.store.postgres.db import Database
from memlane.store.sql.dialect import POSTGRES, Dialect
from memlane.store.sql.structured import SQLStructuredIndex


def _group_query(size: int) -> str:
    """The tsquery of one word group of ``size`` bound words: any of them."""
    return "(" + " || ".join(["phraseto_tsquery('memlane', ?)"] * size) + ")"


class PostgresStructuredIndex(SQLStructuredIndex[Database]):
    """``StructuredIndex`` over the memory, entity and text columns."""

    _dialect: ClassVar[Dialect] = POSTGRES

    def _word_groups(self, user_id: str, groups: tuple[tuple[str, ...], ...]) -> tuple[list[str], list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        for group in groups:
            query = _group_query(len(group))
            # the indexed column (the memory's and the previous turn's words) narrows; its own words decide
            parts.append(f"m.tsv @@ {query} AND to_tsvector('memlane', m.body) @@ {query}")
            params.extend([*group, *group])
        return parts, params
