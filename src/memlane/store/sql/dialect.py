"""The SQL dialect seam: what SQLite and PostgreSQL spell differently in statements both stores share.

A shared statement is written once with ``?`` placeholders (never a ``?`` or ``%`` of its own in a literal) and
run through a dialect, which also renders the few clauses the two databases write differently: a list parameter,
row locks, the planner hints SQLite needs, a JSON value, truth. What differs in more than spelling (full-text
search, vectors, transactions, the hot feed) stays in each backend's package.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, Protocol


class Cursor(Protocol):
    """What a shared statement reads back from a driver's cursor (``sqlite3`` and ``psycopg`` both give this)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """A driver connection inside the caller's transaction (``sqlite3.Connection``, ``psycopg.Connection``)."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


class Reader(Protocol):
    """A backend database's reads: all rows of one query, confined to the user ``scope`` where the server can."""

    def read(self, sql: str, params: Sequence[Any] = (), *, scope: str | None = None) -> list[Any]: ...


class Dialect:
    """One database's spelling of the clauses shared statements use; ``SQLITE`` and ``POSTGRES`` are the two."""

    name: str = ""
    true: str = ""  # a condition that always holds (also what an empty filter renders as)
    false: str = ""
    greatest: str = ""  # the scalar maximum of its arguments
    least: str = ""  # the scalar minimum
    #: Whether rows carry their user for row-level security (the server confines each transaction to one user).
    confines: bool = False
    #: Values per ``IN`` list when a list is spelled as one placeholder each (``None``: one array parameter).
    chunk: int | None = None

    def sql(self, text: str) -> str:
        """``text`` (written with ``?`` placeholders) in this dialect's parameter style."""
        return text

    def run(self, c: Connection, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Execute one shared statement on ``c`` (SQL built from constants, never from values)."""
        cur: Cursor = c.execute(self.sql(sql), params)
        return cur

    def read(self, db: Reader, sql: str, params: Sequence[Any] = (), *, scope: str | None = None) -> list[Any]:
        """All rows of one shared query, read outside the caller's transaction."""
        return db.read(self.sql(sql), params, scope=scope)

    def run_many(self, c: Connection, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Execute one shared statement once per parameter row."""
        for params in rows:
            self.run(c, sql, params)

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (no more values than ``chunk``), with its parameters."""
        raise NotImplementedError

    def chunks(self, values: Iterable[Any], lists: int = 1) -> Iterator[list[Any]]:
        """The distinct ``values`` (first occurrence order) in lists ``in_list`` takes (one list when unbounded),
        ``lists`` times in one statement.
        """
        distinct = list(dict.fromkeys(values))
        size = self.chunk // lists if self.chunk else max(1, len(distinct))
        for start in range(0, len(distinct), size):
            yield distinct[start : start + size]

    def lock(self, mode: str) -> str:
        """The row-lock clause ending a ``SELECT`` (``FOR UPDATE``, ``FOR SHARE``, ``FOR UPDATE SKIP LOCKED``);
        empty where the whole database is the lock (SQLite's ``BEGIN IMMEDIATE``).
        """
        return ""

    def unindexed(self, column: str) -> str:
        """``column`` in a condition the planner must not answer from its index (SQLite's unary ``+``)."""
        return column

    #: A join whose tables the planner must take in the order written (SQLite's ``CROSS JOIN``).
    ordered_join: str = "JOIN"

    def json(self, placeholder: str = "?") -> str:
        """A parameter holding JSON text, as the column's type takes it."""
        return placeholder

    def flag(self, column: str) -> str:
        """The condition that a boolean column holds."""
        return column

    def has_key(self, column: str, key: str) -> str:
        """The JSON object in ``column`` has a non-null ``key`` (a constant name)."""
        raise NotImplementedError

    def binary(self, column: str) -> str:
        """``column`` ordered by its bytes, whatever the database's collation."""
        return column

    def joined(self, column: str) -> str:
        """The aggregate of ``column``'s values joined by the unit separator (character 31); NULL when none."""
        raise NotImplementedError

    def insert_id(self, c: Connection, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` of one row and return its generated ``id``."""
        row = self.run(c, f"{sql} RETURNING id", params).fetchone()
        assert row is not None
        return int(row[0])

    def boolean(self, value: bool) -> Any:
        """A truth value as a parameter of a boolean column."""
        return value

    def either(self, a: str, b: str) -> str:
        """Whether either of two boolean columns holds."""
        return f"({a} OR {b})"

    def not_among(self, column: str, ints: Sequence[int]) -> tuple[str, list[Any]]:
        """``column`` is none of the integers ``ints`` (however many), with its parameters."""
        return f"NOT ({column} = ANY(?))", [list(ints)]

    def capped(self, values: Sequence[Any]) -> list[Any]:
        """The distinct ``values`` that one ``in_list`` takes (all of them where a list is one parameter)."""
        distinct = list(dict.fromkeys(values))
        return distinct if self.chunk is None else distinct[: self.chunk]

    def json_field_is(self, column: str, key: str, value: str | float | bool | None) -> tuple[str, list[Any]]:
        """The JSON object in ``column`` holds ``value`` at ``key`` (``None``: the key is absent or null)."""
        raise NotImplementedError


class SQLiteDialect(Dialect):
    """SQLite: ``?`` placeholders, a list as one placeholder per value, no row locks, ``+column`` hints."""

    name = "sqlite"
    true = "1"
    false = "0"
    greatest = "max"
    least = "min"
    ordered_join = "CROSS JOIN"
    chunk = 500  # well under SQLite's limit of bound parameters (32,766 since 3.32; 999 before)

    def run_many(self, c: Connection, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        if isinstance(c, sqlite3.Connection):  # one call for all rows
            c.executemany(sql, rows)
        else:
            super().run_many(c, sql, rows)

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        if not values:
            return self.false, []
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def unindexed(self, column: str) -> str:
        return f"+{column}"

    def flag(self, column: str) -> str:
        return f"{column} = 1"

    def has_key(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}') IS NOT NULL"

    def boolean(self, value: bool) -> Any:
        return int(value)

    def either(self, a: str, b: str) -> str:
        return f"max({a}, {b})"

    def not_among(self, column: str, ints: Sequence[int]) -> tuple[str, list[Any]]:
        # written out (integers only): a list of any length, with no bound parameter per value
        return f"{column} NOT IN ({','.join(str(int(i)) for i in ints)})", []

    def joined(self, column: str) -> str:
        return f"group_concat({column}, char(31))"

    def insert_id(self, c: Connection, sql: str, params: Sequence[Any]) -> int:
        # the row id of the insert (RETURNING needs SQLite 3.35)
        return int(getattr(self.run(c, sql, params), "lastrowid", 0) or 0)

    def json_field_is(self, column: str, key: str, value: str | float | bool | None) -> tuple[str, list[Any]]:
        path = '$."' + key.replace('"', '""') + '"'
        if value is None:
            return f"json_extract({column}, ?) IS NULL", [path]
        return f"json_extract({column}, ?) = ?", [path, int(value) if isinstance(value, bool) else value]


@functools.lru_cache(maxsize=1024)
def _format(text: str) -> bytes:
    return text.replace("%", "%%").replace("?", "%s").encode()


class PostgresDialect(Dialect):
    """PostgreSQL (psycopg): ``%s`` placeholders, a list as one array parameter, row locks, JSONB parameters."""

    name = "postgres"
    confines = True
    true = "true"
    false = "false"
    greatest = "greatest"
    least = "least"
    chunk = None

    def sql(self, text: str) -> str:
        return _format(text).decode()

    def run(self, c: Connection, sql: str, params: Sequence[Any] = ()) -> Cursor:
        cur: Cursor = c.execute(_format(sql), params)  # bytes: psycopg sends them without encoding again
        return cur

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        if not values:
            return self.false, []
        return f"{column} = ANY(?)", [list(values)]

    def lock(self, mode: str) -> str:
        return f" {mode}"

    def json(self, placeholder: str = "?") -> str:
        return f"{placeholder}::jsonb"

    def has_key(self, column: str, key: str) -> str:
        return f"coalesce({column} -> '{key}', 'null'::jsonb) <> 'null'::jsonb"

    def joined(self, column: str) -> str:
        return f"string_agg({column}, chr(31))"

    def json_field_is(self, column: str, key: str, value: str | float | bool | None) -> tuple[str, list[Any]]:
        if value is None:  # absent, or JSON null (as SQLite's json_extract reads both)
            return f"coalesce({column} -> ?, 'null'::jsonb) = 'null'::jsonb", [key]
        if isinstance(value, bool):  # SQLite compares booleans as 1 and 0
            return f"{column} -> ? IN (?::jsonb, ?::jsonb)", [key, json.dumps(value), json.dumps(int(value))]
        return f"{column} -> ? = ?::jsonb", [key, json.dumps(value)]

    def binary(self, column: str) -> str:
        return f'{column} COLLATE "C"'


SQLITE: Final = SQLiteDialect()
POSTGRES: Final = PostgresDialect()
