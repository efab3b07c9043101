"""The entity tables: which entities each memory involves (and who said it), and each user's aliases."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence
from typing import Final

from memlane.models import MemoryItem
from memlane.records.entities import AliasRow, canonical
from memlane.store.alias_tables import AliasTables
from memlane.store.sqlite.db import CHUNK, Database, marks
from memlane.store.sqlite.hot_feed import HotScopes

_ENTITY_ROW: Final = (
    "INSERT INTO memory_entities (pk, user_id, entity, said_by) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(pk, entity) DO UPDATE SET said_by = excluded.said_by"
)


def entity_rows(pk: int, item: MemoryItem) -> list[tuple[int, str, str, int]]:
    """The entity rows of one memory: each entity once, with whether it is the speaker."""
    speaker = canonical(item.speaker) if item.speaker else None
    return [(pk, item.user_id, e, int(e == speaker)) for e in dict.fromkeys(item.entities)]


def write_new_entities(c: sqlite3.Connection, pks: Sequence[int], items: Sequence[MemoryItem]) -> None:
    """The entity rows of memories just inserted (they have none yet), in one statement."""
    c.executemany(_ENTITY_ROW, [row for pk, item in zip(pks, items, strict=True) for row in entity_rows(pk, item)])


def write_entities(c: sqlite3.Connection, pk: int, item: MemoryItem) -> None:
    """Replace the entity rows of one memory.

    Only the rows of entities it no longer involves are deleted: deleting the last row of an entity erases that
    entity from the user's entity table (a trigger of the graph migration), which a rewrite must not do.
    """
    keep = list(dict.fromkeys(item.entities))
    c.execute(f"DELETE FROM memory_entities WHERE pk = ? AND entity NOT IN ({marks(len(keep))})", (pk, *keep))
    c.executemany(_ENTITY_ROW, entity_rows(pk, item))


def write_aliases(c: sqlite3.Connection, user_id: str, rows: Sequence[AliasRow]) -> None:
    """Insert or overwrite rows of a user's entity table; a removal row takes its alias out (never an entity's own
    row).
    """
    c.executemany(
        "INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(user_id, alias) DO UPDATE SET canonical = excluded.canonical, kind = excluded.kind, "
        "display = excluded.display",
        [(user_id, r.alias, r.target, r.kind, r.display) for r in rows if not r.removes],
    )
    removed = [(user_id, r.alias) for r in rows if r.removes]
    c.executemany("DELETE FROM entities WHERE user_id = ? AND alias = ? AND alias != canonical", removed)
    # nor do its sources stay behind, to take a later alias of the same key with them
    c.executemany("DELETE FROM alias_sources WHERE user_id = ? AND alias = ?", removed)


def write_taught(c: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Record ``(pk, user_id, alias)``: the memory ``pk`` taught ``alias`` and is one of its sources."""
    c.executemany("INSERT OR IGNORE INTO alias_sources (pk, user_id, alias) VALUES (?, ?, ?)", rows)


def replace_taught(c: sqlite3.Connection, pk: int, user_id: str, aliases: Sequence[str]) -> None:
    """Make ``aliases`` the ones memory ``pk`` is a source of: an alias it no longer teaches loses this source
    (and leaves the entity table if that was its last one); the others are kept, never dropped and re-added.
    """
    keep = list(dict.fromkeys(aliases))
    c.execute(f"DELETE FROM alias_sources WHERE pk = ? AND alias NOT IN ({marks(len(keep))})", (pk, *keep))
    write_taught(c, [(pk, user_id, alias) for alias in keep])


class SQLiteEntityIndex:
    """Entity lookups for query planning."""

    _db: Database
    _hot: HotScopes
    _aliases: AliasTables

    def entity_aliases(self, user_id: str) -> builtins.list[AliasRow]:
        with self._db.reading() as c:  # the token first: rows read after a later commit are only read again
            row = c.execute("SELECT token FROM entity_versions WHERE user_id = ?", (user_id,)).fetchone()
            token = None if row is None else int(row[0])
            held = self._aliases.get(user_id, token)
            if held is not None:
                return held
            rows = c.execute("SELECT alias, canonical, kind, display FROM entities WHERE user_id = ?", (user_id,))
            table = [AliasRow(*r) for r in rows]
        self._aliases.put(user_id, token, table)
        return table

    def resolve_aliases(self, user_id: str, keys: Sequence[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(keys))[:CHUNK]
        if not wanted:
            return {}
        rows = self._db.read(
            f"SELECT alias, canonical FROM entities WHERE user_id = ? AND alias IN ({marks(len(wanted))})",
            (user_id, *wanted),
        )
        return {str(a): str(t) for a, t in rows}

    def speakers(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        wanted = list(dict.fromkeys(names))[:CHUNK]
        if not wanted:
            return []
        with self._hot.using(user_id) as model:
            if model is not None:
                return model.speakers(wanted)
        rows = self._db.read(
            "SELECT DISTINCT entity FROM memory_entities WHERE user_id = ? AND said_by = 1 "
            f"AND entity IN ({marks(len(wanted))})",
            (user_id, *wanted),
        )
        return [str(r[0]) for r in rows]

    def known_entities(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        wanted = list(dict.fromkeys(names))[:CHUNK]
        if not wanted:
            return []
        with self._hot.using(user_id) as model:
            if model is not None:
                return model.known_entities(wanted)
        rows = self._db.read(
            f"SELECT DISTINCT entity FROM memory_entities WHERE user_id = ? AND entity IN ({marks(len(wanted))})",
            (user_id, *wanted),
        )
        return [str(r[0]) for r in rows]
