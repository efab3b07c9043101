"""The entity tables: which entities each memory involves (and who said it), and each user's aliases."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import psycopg

from memlane.models import MemoryItem
from memlane.records.entities import AliasRow, canonical
from memlane.store.alias_tables import AliasTables
from memlane.store.postgres.db import Database
from memlane.store.postgres.hot_feed import HotScopes
from memlane.store.postgres.rows import run


def write_entities(c: psycopg.Connection[Any], pk: int, item: MemoryItem) -> None:
    """Replace the entity rows of one memory.

    Only the rows of entities it no longer involves are deleted: deleting the last row of an entity erases that
    entity from the user's entity table (a trigger of the graph migration), which a rewrite must not do.
    """
    speaker = canonical(item.speaker) if item.speaker else None
    names = list(dict.fromkeys(item.entities))
    run(c, "DELETE FROM memory_entities WHERE pk = %s AND NOT (entity = ANY(%s))", (pk, names))
    if names:
        run(
            c,
            "INSERT INTO memory_entities (pk, user_id, entity, said_by) "
            "SELECT %s, %s, e, e = %s FROM unnest(%s::text[]) e "
            "ON CONFLICT (pk, entity) DO UPDATE SET said_by = excluded.said_by",
            (pk, item.user_id, speaker or "", names),
        )


def write_aliases(c: psycopg.Connection[Any], user_id: str, rows: Sequence[AliasRow]) -> None:
    """Insert or overwrite rows of a user's entity table; a removal row takes its alias out (never an entity's own
    row).
    """
    if not rows:
        return
    setting = [(user_id, r.alias, r.target, r.kind, r.display) for r in rows if not r.removes]
    removing = [r.alias for r in rows if r.removes]
    with c.cursor() as cur:
        if setting:
            cur.executemany(
                b"INSERT INTO entities (user_id, alias, canonical, kind, display) VALUES (%s, %s, %s, %s, %s) "
                b"ON CONFLICT (user_id, alias) DO UPDATE SET canonical = excluded.canonical, kind = excluded.kind, "
                b"display = excluded.display",
                setting,
            )
        if removing:
            cur.execute(
                b"DELETE FROM entities WHERE user_id = %s AND alias = ANY(%s) AND alias != canonical",
                (user_id, removing),
            )
            # nor do its sources stay behind, to take a later alias of the same key with them
            cur.execute(b"DELETE FROM alias_sources WHERE user_id = %s AND alias = ANY(%s)", (user_id, removing))


def write_taught(c: psycopg.Connection[Any], rows: Sequence[tuple[str, str, str]]) -> None:
    """Record ``(user_id, memory_id, alias)``: the memory taught ``alias`` and is one of its sources."""
    if not rows:
        return
    with c.cursor() as cur:
        cur.executemany(
            b"INSERT INTO alias_sources (pk, user_id, alias) SELECT pk, user_id, %s FROM memories "
            b"WHERE user_id = %s AND id = %s ON CONFLICT DO NOTHING",
            [(alias, user_id, memory_id) for user_id, memory_id, alias in rows],
        )


def replace_taught(c: psycopg.Connection[Any], pk: int, user_id: str, aliases: Sequence[str]) -> None:
    """Make ``aliases`` the ones memory ``pk`` is a source of: an alias it no longer teaches loses this source
    (and leaves the entity table if that was its last one); the others are kept, never dropped and re-added.
    """
    keep = list(dict.fromkeys(aliases))
    c.execute("DELETE FROM alias_sources WHERE pk = %s AND alias <> ALL(%s)", (pk, keep))
    if keep:
        with c.cursor() as cur:
            cur.executemany(
                b"INSERT INTO alias_sources (pk, user_id, alias) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(pk, user_id, alias) for alias in keep],
            )


class PostgresEntityIndex:
    """Entity lookups for query planning."""

    _db: Database
    _hot: HotScopes
    _aliases: AliasTables

    def entity_aliases(self, user_id: str) -> builtins.list[AliasRow]:
        # One statement (one snapshot): the user's token, and the table unless it is the token of the rows held.
        held = self._aliases.token(user_id)
        rows = self._db.read(
            "SELECT token, NULL, NULL, NULL, NULL FROM entity_versions WHERE user_id = %(u)s UNION ALL "
            "SELECT NULL, alias, canonical, kind, display FROM entities WHERE user_id = %(u)s AND NOT EXISTS "
            "(SELECT 1 FROM entity_versions WHERE user_id = %(u)s AND token = %(held)s)",
            {"u": user_id, "held": held},
            scope=user_id,
        )
        token = next((int(r[0]) for r in rows if r[0] is not None), None)
        if token is not None and token == held:
            cached = self._aliases.get(user_id, token)
            if cached is not None:
                return cached
            return self.entity_aliases(user_id)  # dropped meanwhile by another thread: read the table
        table = [AliasRow(r[1], r[2], r[3], r[4]) for r in rows if r[0] is None]
        self._aliases.put(user_id, token, table)
        return table

    def resolve_aliases(self, user_id: str, keys: Sequence[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = self._db.read(
            "SELECT alias, canonical FROM entities WHERE user_id = %s AND alias = ANY(%s)",
            (user_id, wanted),
            scope=user_id,
        )
        return {str(a): str(t) for a, t in rows}

    def speakers(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        with self._hot.using(user_id) as model:
            if model is not None:
                return model.speakers(wanted)
        rows = self._db.read(
            "SELECT DISTINCT entity FROM memory_entities WHERE user_id = %s AND said_by AND entity = ANY(%s)",
            (user_id, wanted),
            scope=user_id,
        )
        return [str(r[0]) for r in rows]

    def known_entities(self, user_id: str, names: Sequence[str]) -> builtins.list[str]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        with self._hot.using(user_id) as model:
            if model is not None:
                return model.known_entities(wanted)
        rows = self._db.read(
            "SELECT DISTINCT entity FROM memory_entities WHERE user_id = %s AND entity = ANY(%s)",
            (user_id, wanted),
            scope=user_id,
        )
        return [str(r[0]) for r in rows]
