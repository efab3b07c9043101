"""The SQLite store's later migrations (from 0014), appended to ``schema.MIGRATIONS`` in order."""

from __future__ import annotations

from typing import Final

LATER_MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    # Each user's in-memory read model (store/sqlite/hot_feed.py) replays this log: a memory inserted, deleted, or
    # changed in a column the read path uses (its indexed text moves ``embed_hash``), or its entities changed.
    (
        "0014_fact_log",
        """
        CREATE TABLE fact_log (
            seq     INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            pk      INTEGER NOT NULL
        );
        CREATE INDEX fact_log_user ON fact_log(user_id, seq);
        CREATE TABLE fact_log_floor (
            user_id TEXT PRIMARY KEY,
            seq     INTEGER NOT NULL
        );
        CREATE TRIGGER memories_fact_insert AFTER INSERT ON memories BEGIN
            INSERT INTO fact_log (user_id, pk) VALUES (new.user_id, new.pk);
        END;
        CREATE TRIGGER memories_fact_delete AFTER DELETE ON memories BEGIN
            INSERT INTO fact_log (user_id, pk) VALUES (old.user_id, old.pk);
        END;
        CREATE TRIGGER memories_fact_update AFTER UPDATE OF
            text, embed_hash, kind, session_id, position, ts, importance, event_time, event_end, category, intent,
            valid_until ON memories
        WHEN old.text IS NOT new.text OR old.embed_hash IS NOT new.embed_hash OR old.kind IS NOT new.kind
            OR old.session_id IS NOT new.session_id OR old.position IS NOT new.position OR old.ts IS NOT new.ts
            OR old.importance IS NOT new.importance OR old.event_time IS NOT new.event_time
            OR old.event_end IS NOT new.event_end OR old.category IS NOT new.category
            OR old.intent IS NOT new.intent OR (old.valid_until IS NULL) IS NOT (new.valid_until IS NULL)
        BEGIN
            INSERT INTO fact_log (user_id, pk) VALUES (new.user_id, new.pk);
        END;
        CREATE TRIGGER memory_entities_fact_insert AFTER INSERT ON memory_entities BEGIN
            INSERT INTO fact_log (user_id, pk) VALUES (new.user_id, new.pk);
        END;
        CREATE TRIGGER memory_entities_fact_update AFTER UPDATE ON memory_entities BEGIN
            INSERT INTO fact_log (user_id, pk) VALUES (new.user_id, new.pk);
        END;
        CREATE TRIGGER memory_entities_fact_delete AFTER DELETE ON memory_entities BEGIN
            INSERT INTO fact_log (user_id, pk) VALUES (old.user_id, old.pk);
        END
        """,
    ),
    # (user_id, session_id) is the prefix of memories_user_session_position, which serves every lookup it served;
    # one index fewer to update per inserted memory.
    (
        "0015_drop_redundant_session_index",
        """
        DROP INDEX IF EXISTS memories_user_session
        """,
    ),
    # A random token per user, set anew by every write to the user's entity table, whoever writes it: a process
    # keeps the table it read while the token holds (memlane.store.alias_tables).
    (
        "0016_entity_versions",
        """
        CREATE TABLE entity_versions (
            user_id TEXT PRIMARY KEY,
            token   INTEGER NOT NULL
        );
        INSERT INTO entity_versions SELECT user_id, random() FROM (SELECT DISTINCT user_id FROM entities);
        CREATE TRIGGER entities_version_insert AFTER INSERT ON entities BEGIN
            INSERT INTO entity_versions VALUES (new.user_id, random())
            ON CONFLICT(user_id) DO UPDATE SET token = excluded.token;
        END;
        CREATE TRIGGER entities_version_update AFTER UPDATE ON entities BEGIN
            INSERT INTO entity_versions VALUES (new.user_id, random())
            ON CONFLICT(user_id) DO UPDATE SET token = excluded.token;
            INSERT INTO entity_versions SELECT old.user_id, random() WHERE old.user_id IS NOT new.user_id
            ON CONFLICT(user_id) DO UPDATE SET token = excluded.token;
        END;
        CREATE TRIGGER entities_version_delete AFTER DELETE ON entities BEGIN
            INSERT INTO entity_versions VALUES (old.user_id, random())
            ON CONFLICT(user_id) DO UPDATE SET token = excluded.token;
        END
        """,
    ),
    # The memories that taught each alias ("my sister" -> Anna, a first name -> its full name), as relations have
    # their sources: an alias whose last source is erased (delete, eviction, a rewrite that no longer says it)
    # leaves the entity table; never an entity's own row. Aliases from before have no sources and stay.
    (
        "0017_alias_sources",
        """
        CREATE TABLE alias_sources (
            pk      INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            alias   TEXT NOT NULL,
            PRIMARY KEY (pk, alias)
        );
        CREATE INDEX alias_sources_user_alias ON alias_sources(user_id, alias);
        CREATE TRIGGER alias_sources_orphan AFTER DELETE ON alias_sources
        WHEN NOT EXISTS (SELECT 1 FROM alias_sources WHERE user_id = old.user_id AND alias = old.alias)
        BEGIN
            DELETE FROM entities WHERE user_id = old.user_id AND alias = old.alias AND alias != canonical;
        END
        """,
    ),
    # The passages of documents (memlane.documents): spans of the memory's text (no copy of it) and one vector each.
    # They go with their memory (a cascade) and with its text: a text that changes drops them in the same statement.
    # A user's token changes with every passage written or dropped (a random one: a rolled-back write's token is
    # never reused), so a process holding the user's passage matrix knows when to read it again.
    (
        "0018_passages",
        """
        CREATE TABLE passages (
            pk      INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            start   INTEGER NOT NULL,
            stop    INTEGER NOT NULL,
            vec     BLOB NOT NULL,
            PRIMARY KEY (pk, ordinal)
        );
        CREATE INDEX passages_user ON passages(user_id, pk);
        CREATE TRIGGER passages_text_changed AFTER UPDATE OF text ON memories WHEN old.text IS NOT new.text BEGIN
            DELETE FROM passages WHERE pk = new.pk;
        END;
        CREATE TABLE passage_versions (
            user_id TEXT PRIMARY KEY,
            token   INTEGER NOT NULL
        );
        CREATE TRIGGER passages_version_insert AFTER INSERT ON passages BEGIN
            INSERT INTO passage_versions VALUES (new.user_id, random())
            ON CONFLICT(user_id) DO UPDATE SET token = excluded.token;
        END;
        CREATE TRIGGER passages_version_delete AFTER DELETE ON passages BEGIN
            INSERT INTO passage_versions VALUES (old.user_id, random())
            ON CONFLICT(user_id) DO UPDATE SET token = excluded.token;
        END
        """,
    ),
)
