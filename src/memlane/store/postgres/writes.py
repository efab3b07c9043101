"""Writing memory rows with their vectors, text entries, entity rows, history and jobs, each call in one
transaction.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import numpy as np
import psycopg

from memlane.embedding.base import Vectors
from memlane.errors import NotFoundError
from memlane.models import TYPED_KINDS, HistoryEntry, HistoryEvent, MemoryItem, MemoryKind, utcnow
from memlane.records.entities import AliasRow, canonical
from memlane.records.graph import RelationClaim
from memlane.store.alias_tables import AliasTables
from memlane.store.hot.rows import turn_label
from memlane.store.postgres.db import Database
from memlane.store.postgres.entities import replace_taught, write_aliases, write_entities, write_taught
from memlane.store.postgres.graph import write_relations
from memlane.store.postgres.history import erase_text, log_event
from memlane.store.postgres.hot_feed import HotScopes
from memlane.store.postgres.passages import write_passage_rows
from memlane.store.postgres.queue import JOBS
from memlane.store.postgres.rows import run
from memlane.store.postgres.text import previous_turn, refresh_next_context, turn_of
from memlane.store.postgres.validity import forget_links, mark_contradicted
from memlane.store.records import AccessUse, embed_hash
from memlane.store.sql.rows import COLUMNS, MUTABLE, item_params, to_micros
from memlane.store.sql.writes import SQLWrites, WriteSet

_NAMES: Final = tuple(c.strip() for c in COLUMNS.split(","))
_MARKS: Final = ", ".join("%s::jsonb" if c == "metadata" else "%s" for c in _NAMES)
_INSERT: Final = (
    f"INSERT INTO memories ({COLUMNS}, embed_hash, body, ctx, vec) VALUES ({_MARKS}, %s, %s, %s, %s) RETURNING pk"
)
_SETS: Final = ", ".join(f"{c} = %s::jsonb" if c == "metadata" else f"{c} = %s" for c in MUTABLE)


def insert_row(c: psycopg.Connection[Any], item: MemoryItem, body: str, vec: Vectors, ctx: str | None = None) -> int:
    """Insert a memory with its entity rows, vector and text entry (``ctx``: the previous turn's text by default)."""
    context = previous_turn(c, item) if ctx is None else ctx
    row = run(c, _INSERT, (*item_params(item, embed_hash(body)), body, context, vec)).fetchone()
    assert row is not None
    pk = int(row[0])
    write_entities(c, pk, item)
    return pk


# A memory, its text entry and its entity rows, in one statement that returns nothing: an add's statements then leave
# together (a pipeline), not one round trip each.
_INSERT_WITH_ENTITIES: Final = (
    f"WITH ins AS (INSERT INTO memories ({COLUMNS}, embed_hash, body, ctx, vec) VALUES ({_MARKS}, %s, %s, %s, %s) "
    "RETURNING pk, user_id) INSERT INTO memory_entities (pk, user_id, entity, said_by) "
    "SELECT ins.pk, ins.user_id, e, e = %s FROM ins, unnest(%s::text[]) e ON CONFLICT DO NOTHING"
)


def insert_item(c: psycopg.Connection[Any], item: MemoryItem, body: str, vec: Vectors, ctx: str = "") -> None:
    """``insert_row`` without reading anything back (for an add's pipeline); ``ctx``: the previous turn's text, when
    ``item`` replies to it (``_Turns.context``).
    """
    speaker = canonical(item.speaker) if item.speaker else ""
    names = list(dict.fromkeys(item.entities))
    run(c, _INSERT_WITH_ENTITIES, (*item_params(item, embed_hash(body)), body, ctx, vec, speaker, names))


def row_key(c: psycopg.Connection[Any], user_id: str, memory_id: str) -> int:
    """The row key of one memory of this user (locked for this transaction); ``NotFoundError`` when absent."""
    row = run(c, "SELECT pk FROM memories WHERE user_id = %s AND id = %s FOR UPDATE", (user_id, memory_id)).fetchone()
    if row is None:
        raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
    return int(row[0])


def update_fields(c: psycopg.Connection[Any], pk: int, item: MemoryItem) -> None:
    """Overwrite a row's fields and entity rows (not its own text entry; the next turn's context follows)."""
    before = turn_of(c, pk)
    run(c, f"UPDATE memories SET {_SETS} WHERE pk = %s", (*item_params(item, "")[2:-1], pk))
    run(c, "DELETE FROM memory_usage WHERE pk = %s", (pk,))  # the item's counts are the whole counts now
    write_entities(c, pk, item)
    refresh_next_context(c, before)
    after = turn_of(c, pk)
    if after != before:
        refresh_next_context(c, after)


def remove_row(
    c: psycopg.Connection[Any], user_id: str, pk: int, memory_id: str, at: datetime, changes: dict[str, Any]
) -> None:
    """Delete a memory from every index (the next turn's context included), forget its words in history, log DELETE."""
    turn = turn_of(c, pk)
    run(c, "DELETE FROM memories WHERE pk = %s", (pk,))  # entity rows and staged vectors cascade
    refresh_next_context(c, turn)
    run(c, "DELETE FROM feedback WHERE user_id = %s AND memory_id = %s", (user_id, memory_id))
    erase_text(c, user_id, memory_id)
    forget_links(c, user_id, memory_id)
    log_event(c, user_id, memory_id, HistoryEvent.DELETE, at, changes=changes)


def drop_derived(c: psycopg.Connection[Any], user_id: str, memory_id: str, at: datetime, why: str) -> list[str]:
    """Erase what was derived from a memory's text: typed memories drawn from it alone are removed (with their
    entity rows, relations and aliases), the others lose it as a source. ``why`` names the cause in their history
    (``source_deleted``, or ``source_rewritten`` when an update replaced the text). Returns the removed ids.
    """
    removed: list[str] = []
    derived = run(
        c,
        "SELECT pk, id, sources FROM memories WHERE user_id = %s AND kind = ANY(%s) "  # (user_id, kind) index
        "AND sources::jsonb @> jsonb_build_array(jsonb_build_object('memory_id', %s::text)) ORDER BY pk",
        (user_id, [str(k) for k in TYPED_KINDS], memory_id),
    ).fetchall()
    for dpk, mid, sources in derived:
        kept = [ref for ref in json.loads(sources) if ref.get("memory_id") != memory_id]
        if kept:
            run(c, "UPDATE memories SET sources = %s WHERE pk = %s", (json.dumps(kept), int(dpk)))
            log_event(c, user_id, mid, HistoryEvent.UPDATE, at, changes={why: memory_id})
        else:
            removed.append(str(mid))
            remove_row(c, user_id, int(dpk), str(mid), at, {why: memory_id})
    return removed


# A session's last position and, when a message holds it, that turn (the first by key, as ``turn_context`` reads it).
_TAIL: Final = (
    "SELECT m.top, p.text, p.role, p.speaker FROM (SELECT max(position) AS top FROM memories "
    "WHERE user_id = %s AND session_id IS NOT DISTINCT FROM %s) m LEFT JOIN LATERAL (SELECT text, role, speaker "
    "FROM memories WHERE user_id = %s AND session_id IS NOT DISTINCT FROM %s AND position = m.top "
    "AND kind = 'message' ORDER BY pk LIMIT 1) p ON true"
)


# The first message (by key) at each (user, session, position) asked, for a session and for no session apart, so that
# each lookup is answered from the (user_id, session_id, position) index.
_STORED_TURNS: Final = (
    "SELECT k.u, k.s, k.pos, p.text, p.role, p.speaker FROM unnest(%s::text[], %s::text[], %s::bigint[]) k(u, s, pos) "
    "CROSS JOIN LATERAL (SELECT text, role, speaker FROM memories q WHERE q.user_id = k.u AND q.session_id = k.s "
    "AND q.position = k.pos AND q.kind = 'message' ORDER BY q.pk LIMIT 1) p UNION ALL "
    "SELECT k.u, NULL, k.pos, p.text, p.role, p.speaker FROM unnest(%s::text[], %s::bigint[]) k(u, pos) "
    "CROSS JOIN LATERAL (SELECT text, role, speaker FROM memories q WHERE q.user_id = k.u AND q.session_id IS NULL "
    "AND q.position = k.pos AND q.kind = 'message' ORDER BY q.pk LIMIT 1) p"
)
_Place = tuple[str, str | None, int]  # (user, session, position)
_Turn = tuple[str | None, str | None, str]  # (role, speaker, text)


class _Turns:
    """One write's turns: the positions of its unnumbered messages, and each turn's previous-turn text decided in
    Python by ``turn_label`` (SQL's lower() is not Python's casefold: "STRASSE" and "Straße" are one speaker).

    The previous turn of a message is the first message (by key) one position earlier in its session when the
    message is written: a stored one, else one written before it in this write. The stored ones are read before
    the write (one round trip for the numbered messages' sessions' last turns, under each session's lock, and one
    for the turns before messages that come with a position, as an import's do).
    """

    def __init__(self, c: psycopg.Connection[Any], items: Sequence[MemoryItem]) -> None:
        self.c = c
        self.top: dict[tuple[str, str | None], int] = {}
        self.known: dict[_Place, _Turn | None] = {}  # None: no message holds that place
        wanted = {
            (it.user_id, it.session_id, it.position - 1)
            for it in items
            if it.kind == MemoryKind.MESSAGE and it.position  # a position of 0 has no previous turn
        }
        if wanted:
            some = [w for w in wanted if w[1] is not None]
            none = [w for w in wanted if w[1] is None]
            params = ([w[0] for w in some], [w[1] for w in some], [w[2] for w in some])
            rows = run(c, _STORED_TURNS, (*params, [w[0] for w in none], [w[2] for w in none])).fetchall()
            self.known = dict.fromkeys(wanted)
            for user, session, position, text, role, speaker in rows:
                self.known[(user, session, int(position))] = (role, speaker, str(text))

    def number(self, item: MemoryItem) -> None:
        """Give an unnumbered message the next position of its session (in place)."""
        key = (item.user_id, item.session_id)
        if key not in self.top:
            # Writers of one session (in any process) take turns here until they commit: positions stay distinct.
            lock = f"{item.user_id}\x1f{item.session_id}"
            run(self.c, "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock,))
            row = run(self.c, _TAIL, (*key, *key)).fetchone()
            self.top[key] = -1 if row is None or row[0] is None else int(row[0])
            if row is not None and row[0] is not None:
                self.known[(*key, int(row[0]))] = None if row[1] is None else (row[2], row[3], str(row[1]))
        self.top[key] += 1
        item.position = self.top[key]

    def context(self, item: MemoryItem) -> str:
        """The previous turn's text when ``item`` is a turn that replies to it (another role or speaker), else ''
        (called as ``item`` is written, in the write's order).
        """
        if item.kind != MemoryKind.MESSAGE or item.position is None:
            return ""
        place = (item.user_id, item.session_id, item.position)
        if self.known.get(place) is None:  # the first message there: the previous turn of the one after it
            self.known[place] = (item.role, item.speaker, item.text)
        if not item.position:
            return ""
        before = (item.user_id, item.session_id, item.position - 1)
        if before not in self.known:  # not read ahead (a numbered message after a gap): ask the store
            return previous_turn(self.c, item)
        turn = self.known[before]
        if turn is None:
            return ""
        role, speaker, text = turn
        return text if turn_label(role, speaker) != turn_label(item.role, item.speaker) else ""


class PostgresWrites(SQLWrites):
    """Inserts, updates, deletes and access counts."""

    _db: Database
    _hot: HotScopes
    _aliases: AliasTables

    def _write(self, w: WriteSet) -> None:
        items, index_texts, vectors, event, changes = w.items, w.index_texts, w.vectors, w.event, w.changes
        aliases, jobs, updates, finish, claim = w.aliases, w.jobs, w.updates, w.finish, w.claim
        relations, taught, passages = w.relations, w.taught, w.passages
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._db.atomic() as c, c.pipeline():
            if finish is not None:  # first: a fenced job writes nothing
                JOBS.finish(c, finish, to_micros(utcnow()))
            turns = _Turns(c, items)
            for item, body, vec in zip(items, index_texts, vecs, strict=True):
                if item.position is None and item.kind == MemoryKind.MESSAGE:
                    turns.number(item)
                insert_item(c, item, body, vec, turns.context(item))
                extra = dict(changes.get(item.id, {}))
                log_event(c, item.user_id, item.id, event, item.created_at, None, item.text, extra)
                if item.superseded_by:  # an older claim learnt late: born superseded, so are its messages
                    mark_contradicted(c, item)
            if passages:
                write_passage_rows(c, [(it.id, it.user_id) for it in items], passages)
            for item, entry in updates:
                update_fields(c, row_key(c, item.user_id, item.id), item)
                log_event(
                    c, item.user_id, item.id, entry.event, entry.at, entry.old_text, entry.new_text, entry.changes
                )
                if entry.event is HistoryEvent.SUPERSEDE:
                    mark_contradicted(c, item)
            for user_id, rows in aliases.items():
                write_aliases(c, user_id, rows)
            if taught:
                write_taught(c, [(it.user_id, it.id, a) for it in items for a in taught.get(it.id, ())])
            for user_id, claims in relations.items():
                write_relations(c, user_id, claims)
            for job in jobs:
                JOBS.enqueue(c, job, claim)

    def replace(
        self,
        item: MemoryItem,
        index_text: str | None,
        vector: Vectors | None,
        entry: HistoryEntry,
        aliases: Sequence[AliasRow] = (),
        *,
        relations: Sequence[RelationClaim] | None = None,
        taught: Sequence[str] | None = None,
    ) -> None:
        with self._db.atomic(item.user_id) as c:
            pk = row_key(c, item.user_id, item.id)
            if entry.old_text is not None and entry.old_text != entry.new_text:  # a rewrite erases as a delete does
                drop_derived(c, item.user_id, item.id, entry.at, "source_rewritten")
            update_fields(c, pk, item)
            write_aliases(c, item.user_id, aliases)
            if taught is not None:  # the text was read again: what it teaches now is what it is the source of
                replace_taught(c, pk, item.user_id, taught)
            if relations is not None:
                run(c, "DELETE FROM relation_sources WHERE pk = %s", (pk,))  # a relation left unsourced goes
                write_relations(c, item.user_id, relations)
            if index_text is not None and vector is not None:
                vec = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
                run(
                    c,
                    "UPDATE memories SET embed_hash = %s, body = %s, vec = %s WHERE pk = %s",
                    (embed_hash(index_text), index_text, vec, pk),
                )
            log_event(c, item.user_id, item.id, entry.event, entry.at, entry.old_text, entry.new_text, entry.changes)
        if index_text is not None:
            self._aliases.forget(item.user_id)  # a name only the old text had does not stay in this process

    def delete(self, user_id: str, memory_id: str, at: datetime) -> builtins.list[str]:
        with self._db.atomic(user_id) as c:
            pk = row_key(c, user_id, memory_id)
            removed = [memory_id]
            remove_row(c, user_id, pk, memory_id, at, {})
            removed += drop_derived(c, user_id, memory_id, at, "source_deleted")
        self._aliases.forget(user_id)  # an orphaned entity's name leaves this process too
        return removed

    def delete_user(self, user_id: str) -> int:
        with self._db.atomic(user_id) as c:
            row = run(c, "SELECT count(*) FROM memories WHERE user_id = %s", (user_id,)).fetchone()
            n = int(row[0]) if row else 0
            for table in (
                "memories",
                "entities",
                "entity_versions",
                "feedback",
                "history",
                "jobs",
                "archive",
                "contradictions",
                "relations",
                "memory_flags",
                "pii_originals",
                "passage_versions",
                "text_stats",
            ):
                run(c, f"DELETE FROM {table} WHERE user_id = %s", (user_id,))
            # The user's log goes with them (no trace of whom is kept); the store's erasure counter tells other
            # processes' read models to check that they hold no rows of a user erased this way.
            run(c, "DELETE FROM fact_log WHERE user_id = %s", (user_id,))
            run(c, "DELETE FROM fact_log_floor WHERE user_id = %s", (user_id,))
            run(
                c,
                "INSERT INTO meta VALUES ('erasures', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text",
            )
        self._hot.forget(user_id)
        self._aliases.forget(user_id)
        return n

    def record_access(self, user_id: str, uses: Mapping[str, AccessUse]) -> None:
        if not uses:
            return
        ids = list(uses)
        with self._db.atomic(user_id, unseen=True) as c:  # no read model holds access counts
            run(  # narrow rows, not the memories rows (migration 0007 says why)
                c,
                "INSERT INTO memory_usage (pk, user_id, access_count, last_accessed) "
                "SELECT m.pk, m.user_id, u.n, u.at FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS u(id, n, at) "
                "JOIN memories m ON m.user_id = %s AND m.id = u.id ORDER BY m.pk "
                "ON CONFLICT (pk) DO UPDATE SET access_count = memory_usage.access_count + excluded.access_count, "
                "last_accessed = excluded.last_accessed",
                (ids, [uses[i].times for i in ids], [to_micros(uses[i].last) for i in ids], user_id),
            )
