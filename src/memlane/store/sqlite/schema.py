"""Named, ordered schema migrations of the SQLite store, recorded in a table as they are applied."""

from __future__ import annotations

from typing import Final

from memlane.store.sqlite.schema_context import CONTEXT_MIGRATIONS
from memlane.store.sqlite.schema_later import LATER_MIGRATIONS
from memlane.store.sqlite.schema_timeline import TIMELINE_MIGRATIONS

# 'MLNE': marks a file as a memlane database (PRAGMA application_id).
APPLICATION_ID: Final = 0x4D4C4E45

FTS_TOKENIZE: Final = "porter unicode61 remove_diacritics 2"

MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    (
        "0001_initial",
        f"""
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE memories (
            pk            INTEGER PRIMARY KEY,
            id            TEXT NOT NULL UNIQUE,
            user_id       TEXT NOT NULL,
            agent_id      TEXT,
            session_id    TEXT,
            kind          TEXT NOT NULL,
            role          TEXT,
            speaker       TEXT,
            text          TEXT NOT NULL,
            ts            INTEGER NOT NULL,
            created_at    INTEGER NOT NULL,
            updated_at    INTEGER NOT NULL,
            event_time    INTEGER,
            importance    REAL NOT NULL,
            confidence    REAL NOT NULL,
            access_count  INTEGER NOT NULL DEFAULT 0,
            last_accessed INTEGER,
            content_hash  TEXT NOT NULL,
            embed_hash    TEXT NOT NULL,
            sources       TEXT NOT NULL DEFAULT '[]',
            metadata      TEXT NOT NULL DEFAULT '{{}}'
        );
        CREATE INDEX memories_user_ts ON memories(user_id, ts);
        CREATE INDEX memories_user_session ON memories(user_id, session_id);
        CREATE INDEX memories_user_kind ON memories(user_id, kind);
        CREATE INDEX memories_user_hash ON memories(user_id, content_hash);
        CREATE INDEX memories_embed_hash ON memories(embed_hash);
        CREATE TABLE vectors (
            pk      INTEGER PRIMARY KEY REFERENCES memories(pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            vec     BLOB NOT NULL
        );
        CREATE INDEX vectors_user ON vectors(user_id);
        CREATE TABLE scope_versions (
            user_id TEXT PRIMARY KEY,
            version INTEGER NOT NULL
        );
        CREATE VIRTUAL TABLE memories_fts USING fts5(body, scope, tokenize = '{FTS_TOKENIZE}');
        CREATE TABLE history (
            seq       INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            user_id   TEXT NOT NULL,
            event     TEXT NOT NULL,
            at        INTEGER NOT NULL,
            old_text  TEXT,
            new_text  TEXT,
            changes   TEXT NOT NULL DEFAULT '{{}}'
        );
        CREATE INDEX history_memory ON history(user_id, memory_id, seq);
        """,
    ),
    (
        "0002_enrichment",
        """
        ALTER TABLE memories ADD COLUMN position INTEGER;
        ALTER TABLE memories ADD COLUMN event_end INTEGER;
        ALTER TABLE memories ADD COLUMN category TEXT;
        ALTER TABLE memories ADD COLUMN intent TEXT;
        ALTER TABLE memories ADD COLUMN entities TEXT NOT NULL DEFAULT '[]';
        UPDATE memories SET position = (
            SELECT count(*) FROM memories o
            WHERE o.user_id = memories.user_id AND o.session_id IS memories.session_id
              AND (o.ts < memories.ts OR (o.ts = memories.ts AND o.pk < memories.pk))
        );
        CREATE INDEX memories_user_session_position ON memories(user_id, session_id, position);
        CREATE INDEX memories_user_event ON memories(user_id, event_time);
        CREATE TABLE memory_entities (
            pk      INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            entity  TEXT NOT NULL,
            said_by INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (pk, entity)
        );
        CREATE INDEX memory_entities_user_entity ON memory_entities(user_id, entity);
        CREATE TABLE entities (
            user_id   TEXT NOT NULL,
            alias     TEXT NOT NULL,
            canonical TEXT NOT NULL,
            kind      TEXT NOT NULL,
            display   TEXT NOT NULL,
            PRIMARY KEY (user_id, alias)
        )
        """,
    ),
    (
        "0003_feedback",
        """
        CREATE TABLE feedback (
            seq       INTEGER PRIMARY KEY,
            user_id   TEXT NOT NULL,
            query     TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            useful    INTEGER NOT NULL,
            at        INTEGER NOT NULL
        );
        CREATE INDEX feedback_user_memory ON feedback(user_id, memory_id)
        """,
    ),
    (
        "0004_lifecycle",
        """
        ALTER TABLE memories ADD COLUMN valid_from INTEGER;
        ALTER TABLE memories ADD COLUMN valid_until INTEGER;
        ALTER TABLE memories ADD COLUMN superseded_by TEXT;
        CREATE INDEX memories_user_superseded ON memories(user_id, valid_until) WHERE valid_until IS NOT NULL;
        CREATE TABLE jobs (
            seq        INTEGER PRIMARY KEY,
            id         TEXT NOT NULL UNIQUE,
            user_id    TEXT NOT NULL,
            kind       TEXT NOT NULL,
            payload    TEXT NOT NULL DEFAULT '{}',
            state      TEXT NOT NULL,
            attempts   INTEGER NOT NULL DEFAULT 0,
            error      TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX jobs_state ON jobs(state, seq);
        CREATE INDEX jobs_user ON jobs(user_id, seq);
        CREATE TABLE archive (
            pk          INTEGER PRIMARY KEY,
            id          TEXT NOT NULL UNIQUE,
            user_id     TEXT NOT NULL,
            kind        TEXT NOT NULL,
            item        TEXT NOT NULL,
            body        TEXT NOT NULL,
            vec         BLOB NOT NULL,
            archived_at INTEGER NOT NULL,
            reason      TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX archive_user ON archive(user_id, archived_at)
        """,
    ),
    (
        "0005_fts_context",
        f"""
        CREATE VIRTUAL TABLE memories_fts_v2 USING fts5(body, ctx, scope, tokenize = '{FTS_TOKENIZE}');
        INSERT INTO memories_fts_v2 (rowid, body, ctx, scope)
            SELECT f.rowid, f.body, coalesce((
                SELECT p.text FROM memories m JOIN memories p
                    ON p.user_id = m.user_id AND p.session_id IS m.session_id AND p.position = m.position - 1
                WHERE m.pk = f.rowid AND m.kind = 'message' AND p.kind = 'message'
            ), ''), f.scope
            FROM memories_fts f;
        DROP TABLE memories_fts;
        ALTER TABLE memories_fts_v2 RENAME TO memories_fts
        """,
    ),
    (
        "0006_fts_context_refresh",
        """
        UPDATE memories_fts SET ctx = coalesce((
            SELECT p.text FROM memories m JOIN memories p
                ON p.user_id = m.user_id AND p.session_id IS m.session_id AND p.position = m.position - 1
            WHERE m.pk = memories_fts.rowid AND m.kind = 'message' AND p.kind = 'message'
        ), '')
        WHERE ctx != coalesce((
            SELECT p.text FROM memories m JOIN memories p
                ON p.user_id = m.user_id AND p.session_id IS m.session_id AND p.position = m.position - 1
            WHERE m.pk = memories_fts.rowid AND m.kind = 'message' AND p.kind = 'message'
        ), '')
        """,
    ),
    (
        "0007_vector_log",
        """
        CREATE TABLE vector_log (
            seq     INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            pk      INTEGER NOT NULL
        );
        CREATE INDEX vector_log_user ON vector_log(user_id, seq);
        CREATE TABLE vector_log_floor (
            user_id TEXT PRIMARY KEY,
            seq     INTEGER NOT NULL
        );
        CREATE TRIGGER vectors_log_insert AFTER INSERT ON vectors BEGIN
            INSERT INTO vector_log (user_id, pk) VALUES (new.user_id, new.pk);
        END;
        CREATE TRIGGER vectors_log_update AFTER UPDATE OF vec ON vectors BEGIN
            INSERT INTO vector_log (user_id, pk) VALUES (new.user_id, new.pk);
        END;
        CREATE TRIGGER vectors_log_delete AFTER DELETE ON vectors BEGIN
            INSERT INTO vector_log (user_id, pk) VALUES (old.user_id, old.pk);
        END
        """,
    ),
    (
        "0008_job_leases",
        """
        ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
        ALTER TABLE jobs ADD COLUMN lease_until INTEGER;
        CREATE TABLE locks (
            name  TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            until INTEGER NOT NULL
        );
        CREATE TABLE vectors_next (
            pk  INTEGER PRIMARY KEY REFERENCES memories(pk) ON DELETE CASCADE,
            vec BLOB NOT NULL
        )
        """,
    ),
    (
        # Messages whose claim a later memory superseded (validity of raw turns; see store/sqlite/validity.py).
        "0009_validity",
        """
        CREATE TABLE contradictions (
            user_id         TEXT NOT NULL,
            memory_id       TEXT NOT NULL,
            superseded      TEXT NOT NULL,
            contradicted_by TEXT NOT NULL,
            since           INTEGER NOT NULL,
            PRIMARY KEY (user_id, memory_id, superseded)
        ) WITHOUT ROWID
        """,
    ),
    (
        # A queued job held back from the queue scan until then: handed to a broker's worker (Celery), or waiting
        # out the backoff of a retry. A claim naming the job (the broker's delivery) may take it earlier.
        "0010_job_dispatch",
        """
        ALTER TABLE jobs ADD COLUMN not_before INTEGER
        """,
    ),
    (
        # The knowledge graph (store/sql/graph.py): typed relations between entities with their source memories
        # and validity window. Entity nodes are the entity table's rows, has-element edges ``memory_entities``.
        # Erasure: a relation whose last source memory is gone goes too, and an entity that no memory and no
        # relation involves any more leaves the entity table with its aliases.
        "0011_graph",
        """
        CREATE TABLE relations (
            id            INTEGER PRIMARY KEY,
            user_id       TEXT NOT NULL,
            subject       TEXT NOT NULL,
            predicate     TEXT NOT NULL,
            object        TEXT NOT NULL,
            subject_type  TEXT NOT NULL DEFAULT 'other',
            object_type   TEXT NOT NULL DEFAULT 'other',
            valid_from    INTEGER NOT NULL,
            valid_until   INTEGER,
            superseded_by INTEGER
        );
        CREATE INDEX relations_user_subject ON relations(user_id, subject, predicate);
        CREATE INDEX relations_user_object ON relations(user_id, object);
        CREATE TABLE relation_sources (
            relation INTEGER NOT NULL REFERENCES relations(id) ON DELETE CASCADE,
            pk       INTEGER NOT NULL REFERENCES memories(pk) ON DELETE CASCADE,
            PRIMARY KEY (relation, pk)
        ) WITHOUT ROWID;
        CREATE INDEX relation_sources_pk ON relation_sources(pk);
        CREATE TRIGGER relation_sources_orphan AFTER DELETE ON relation_sources
        WHEN NOT EXISTS (SELECT 1 FROM relation_sources WHERE relation = old.relation)
        BEGIN
            DELETE FROM relations WHERE id = old.relation;
        END;
        CREATE TRIGGER relations_orphan_entities AFTER DELETE ON relations BEGIN
            DELETE FROM entities WHERE user_id = old.user_id AND canonical IN (old.subject, old.object)
                AND NOT EXISTS (SELECT 1 FROM memory_entities e WHERE e.user_id = old.user_id
                                AND e.entity = entities.canonical)
                AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.user_id = old.user_id
                                AND (r.subject = entities.canonical OR r.object = entities.canonical));
        END;
        CREATE TRIGGER memory_entities_orphan AFTER DELETE ON memory_entities
        WHEN NOT EXISTS (SELECT 1 FROM memory_entities WHERE user_id = old.user_id AND entity = old.entity)
            AND NOT EXISTS (SELECT 1 FROM relations WHERE user_id = old.user_id
                            AND (subject = old.entity OR object = old.entity))
        BEGIN
            DELETE FROM entities WHERE user_id = old.user_id AND canonical = old.entity;
        END
        """,
    ),
    (
        # Injection flags and the sealed originals of redacted PII (see memlane.security). Both are keyed by memory
        # id, not row, as a flag is written before its memory (fail closed); both go with the memory, unless it
        # moved to the archive, and with the archived copy.
        "0012_security",
        """
        CREATE TABLE memory_flags (
            user_id    TEXT NOT NULL,
            memory_id  TEXT NOT NULL,
            score      REAL NOT NULL,
            reasons    TEXT NOT NULL DEFAULT '[]',
            detector   TEXT NOT NULL,
            flagged_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, memory_id)
        ) WITHOUT ROWID;
        CREATE TABLE pii_originals (
            user_id   TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            sealed    BLOB NOT NULL,
            kinds     TEXT NOT NULL DEFAULT '[]',
            at        INTEGER NOT NULL,
            PRIMARY KEY (user_id, memory_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER memories_security_delete AFTER DELETE ON memories
        WHEN NOT EXISTS (SELECT 1 FROM archive WHERE archive.id = old.id) BEGIN
            DELETE FROM memory_flags WHERE user_id = old.user_id AND memory_id = old.id;
            DELETE FROM pii_originals WHERE user_id = old.user_id AND memory_id = old.id;
        END;
        CREATE TRIGGER archive_security_delete AFTER DELETE ON archive
        WHEN NOT EXISTS (SELECT 1 FROM memories WHERE memories.id = old.id) BEGIN
            DELETE FROM memory_flags WHERE user_id = old.user_id AND memory_id = old.id;
            DELETE FROM pii_originals WHERE user_id = old.user_id AND memory_id = old.id;
        END
        """,
    ),
    (
        # A mirror of the vectors in another engine (Qdrant, store/qdrant/) filters on these columns: a change of
        # one of them is logged like a vector write, so the mirror's copy of them follows; ``vector_mirrors`` holds
        # how far each mirror has applied the log.
        "0013_vector_mirror",
        """
        CREATE TRIGGER memories_log_filter_fields AFTER UPDATE OF
            agent_id, session_id, kind, role, speaker, ts, metadata, valid_from, valid_until ON memories
        WHEN old.agent_id IS NOT new.agent_id OR old.session_id IS NOT new.session_id OR old.kind IS NOT new.kind
            OR old.role IS NOT new.role OR old.speaker IS NOT new.speaker OR old.ts IS NOT new.ts
            OR old.metadata IS NOT new.metadata OR old.valid_from IS NOT new.valid_from
            OR old.valid_until IS NOT new.valid_until
        BEGIN
            INSERT INTO vector_log (user_id, pk) SELECT v.user_id, v.pk FROM vectors v WHERE v.pk = new.pk;
        END;
        CREATE TABLE vector_mirrors (
            target   TEXT PRIMARY KEY,
            identity TEXT NOT NULL,
            seq      INTEGER NOT NULL
        )
        """,
    ),
    *LATER_MIGRATIONS,
    *TIMELINE_MIGRATIONS,
    *CONTEXT_MIGRATIONS,
)
