"""Named, ordered schema migrations of the PostgreSQL store, recorded in a table as they are applied.

Times are integer microseconds since the epoch and JSON fields are text, as in the SQLite store, so that one
conversion of rows to records serves both. Every table carries the user scope column.
"""

from __future__ import annotations

from typing import Final

from memlane.store.postgres.schema_context import CONTEXT_MIGRATIONS
from memlane.store.postgres.schema_later import LATER_MIGRATIONS
from memlane.store.postgres.schema_timeline import TIMELINE_MIGRATIONS

# The key of the advisory lock that serialises migrations of one database across processes.
MIGRATION_LOCK: Final = 0x4D4C4E45

MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    (
        "0001_initial",
        """
        CREATE EXTENSION IF NOT EXISTS vector;
        CREATE EXTENSION IF NOT EXISTS btree_gin;
        CREATE EXTENSION IF NOT EXISTS unaccent;
        -- The lexical analysis: words as the default parser splits them (a hyphenated word by its parts), accents
        -- removed, lower-cased and stemmed by the Porter stemmer, no stop words: as FTS5's porter unicode61 in SQLite.
        -- Addresses, hosts, paths and version numbers stay whole tokens, lower-cased.
        CREATE TEXT SEARCH DICTIONARY memlane_stem (TEMPLATE = snowball, Language = porter);
        CREATE TEXT SEARCH CONFIGURATION memlane (COPY = pg_catalog.simple);
        ALTER TEXT SEARCH CONFIGURATION memlane DROP MAPPING FOR asciihword, hword, numhword;
        ALTER TEXT SEARCH CONFIGURATION memlane ALTER MAPPING FOR
            asciiword, word, numword, hword_asciipart, hword_part, hword_numpart
            WITH unaccent, memlane_stem;
        ALTER TEXT SEARCH CONFIGURATION memlane ALTER MAPPING FOR
            email, url, host, url_path, file, sfloat, version, float, int, uint
            WITH unaccent, simple;
        -- Tokens of an analysed text (a word counted at each of its positions): the document length of BM25.
        CREATE FUNCTION memlane_doclen(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
            $$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1) $$;
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE memories (
            pk            BIGSERIAL PRIMARY KEY,
            id            TEXT NOT NULL UNIQUE,
            user_id       TEXT NOT NULL,
            agent_id      TEXT,
            session_id    TEXT,
            kind          TEXT NOT NULL,
            role          TEXT,
            speaker       TEXT,
            text          TEXT NOT NULL,
            ts            BIGINT NOT NULL,
            created_at    BIGINT NOT NULL,
            updated_at    BIGINT NOT NULL,
            event_time    BIGINT,
            importance    DOUBLE PRECISION NOT NULL,
            confidence    DOUBLE PRECISION NOT NULL,
            access_count  BIGINT NOT NULL DEFAULT 0,
            last_accessed BIGINT,
            content_hash  TEXT NOT NULL,
            sources       TEXT NOT NULL DEFAULT '[]',
            metadata      JSONB NOT NULL DEFAULT '{}',
            position      BIGINT,
            event_end     BIGINT,
            category      TEXT,
            intent        TEXT,
            entities      TEXT NOT NULL DEFAULT '[]',
            valid_from    BIGINT,
            valid_until   BIGINT,
            superseded_by TEXT,
            embed_hash    TEXT NOT NULL,
            body          TEXT NOT NULL,
            ctx           TEXT NOT NULL DEFAULT '',
            vec           vector NOT NULL,
            -- The text index: the memory's own words (weight A) and the previous turn's (weight B).
            tsv           tsvector GENERATED ALWAYS AS (
                setweight(to_tsvector('memlane', body), 'A') || setweight(to_tsvector('memlane', ctx), 'B')
            ) STORED,
            -- BM25's document length, counted as FTS5 counts it: both columns' tokens and the scope token.
            doclen        INTEGER GENERATED ALWAYS AS (
                memlane_doclen(to_tsvector('memlane', body)) + memlane_doclen(to_tsvector('memlane', ctx)) + 1
            ) STORED
        );
        CREATE INDEX memories_user_ts ON memories (user_id, ts, pk);
        CREATE INDEX memories_user_session_position ON memories (user_id, session_id, position);
        CREATE INDEX memories_user_kind ON memories (user_id, kind);
        CREATE INDEX memories_user_hash ON memories (user_id, content_hash);
        CREATE INDEX memories_user_event ON memories (user_id, event_time);
        CREATE INDEX memories_embed_hash ON memories (embed_hash);
        CREATE INDEX memories_user_superseded ON memories (user_id, valid_until) WHERE valid_until IS NOT NULL;
        -- The user is a key of the text index itself (btree_gin): a search reads only that user's postings.
        CREATE INDEX memories_user_tsv ON memories USING gin (user_id, tsv);
        -- BM25's collection statistics, per user (a user's scores never depend on another user's memories).
        CREATE TABLE text_stats (
            user_id TEXT PRIMARY KEY,
            docs    BIGINT NOT NULL,
            tokens  BIGINT NOT NULL
        );
        CREATE FUNCTION memlane_text_stats() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('DELETE', 'UPDATE') THEN
                UPDATE text_stats SET docs = docs - 1, tokens = tokens - OLD.doclen WHERE user_id = OLD.user_id;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                INSERT INTO text_stats AS s (user_id, docs, tokens) VALUES (NEW.user_id, 1, NEW.doclen)
                ON CONFLICT (user_id) DO UPDATE SET docs = s.docs + 1, tokens = s.tokens + excluded.tokens;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memories_text_stats AFTER INSERT OR DELETE OR UPDATE OF body, ctx, user_id ON memories
            FOR EACH ROW EXECUTE FUNCTION memlane_text_stats();
        CREATE TABLE memory_entities (
            pk      BIGINT NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            entity  TEXT NOT NULL,
            said_by BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (pk, entity)
        );
        CREATE INDEX memory_entities_user_entity ON memory_entities (user_id, entity);
        CREATE TABLE entities (
            user_id   TEXT NOT NULL,
            alias     TEXT NOT NULL,
            canonical TEXT NOT NULL,
            kind      TEXT NOT NULL,
            display   TEXT NOT NULL,
            PRIMARY KEY (user_id, alias)
        );
        CREATE TABLE history (
            seq       BIGSERIAL PRIMARY KEY,
            memory_id TEXT NOT NULL,
            user_id   TEXT NOT NULL,
            event     TEXT NOT NULL,
            at        BIGINT NOT NULL,
            old_text  TEXT,
            new_text  TEXT,
            changes   TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX history_memory ON history (user_id, memory_id, seq);
        CREATE TABLE feedback (
            seq       BIGSERIAL PRIMARY KEY,
            user_id   TEXT NOT NULL,
            query     TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            useful    BOOLEAN NOT NULL,
            at        BIGINT NOT NULL
        );
        CREATE INDEX feedback_user_memory ON feedback (user_id, memory_id);
        CREATE TABLE jobs (
            seq         BIGSERIAL PRIMARY KEY,
            id          TEXT NOT NULL UNIQUE,
            user_id     TEXT NOT NULL,
            kind        TEXT NOT NULL,
            payload     TEXT NOT NULL DEFAULT '{}',
            state       TEXT NOT NULL,
            attempts    INTEGER NOT NULL DEFAULT 0,
            error       TEXT,
            created_at  BIGINT NOT NULL,
            updated_at  BIGINT NOT NULL,
            lease_owner TEXT,
            lease_until BIGINT
        );
        CREATE INDEX jobs_state ON jobs (state, seq);
        CREATE INDEX jobs_user ON jobs (user_id, seq);
        CREATE TABLE locks (
            name  TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            until BIGINT NOT NULL
        );
        CREATE TABLE archive (
            pk          BIGSERIAL PRIMARY KEY,
            id          TEXT NOT NULL UNIQUE,
            user_id     TEXT NOT NULL,
            kind        TEXT NOT NULL,
            item        TEXT NOT NULL,
            body        TEXT NOT NULL,
            vec         vector NOT NULL,
            archived_at BIGINT NOT NULL,
            reason      TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX archive_user ON archive (user_id, archived_at);
        CREATE TABLE vectors_next (
            pk  BIGINT PRIMARY KEY REFERENCES memories (pk) ON DELETE CASCADE,
            vec vector NOT NULL
        );
        CREATE TABLE contradictions (
            user_id         TEXT NOT NULL,
            memory_id       TEXT NOT NULL,
            superseded      TEXT NOT NULL,
            contradicted_by TEXT NOT NULL,
            since           BIGINT NOT NULL,
            PRIMARY KEY (user_id, memory_id, superseded)
        )
        """,
    ),
    (
        # Row-level security as defence in depth: a transaction confined to one user (``memlane.scope``, set by the
        # store for every call about one user) sees and writes only that user's rows, even through a query that
        # forgot its user condition. Unconfined transactions (jobs across users, counts, re-embedding) see all.
        # FORCE: the tables' owner (normally the application's role) is held to it too; superusers never are.
        "0002_row_security",
        """
        DO $$
        DECLARE t text;
        BEGIN
            FOREACH t IN ARRAY ARRAY[
                'memories', 'memory_entities', 'entities', 'history', 'feedback', 'jobs', 'archive',
                'contradictions', 'text_stats'
            ] LOOP
                EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
                EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
                EXECUTE format(
                    'CREATE POLICY memlane_scope ON %I USING '
                    '(coalesce(current_setting(''memlane.scope'', true), '''') IN ('''', user_id))',
                    t
                );
            END LOOP;
        END $$
        """,
    ),
    (
        # A queued job held back from the queue scan until then (handed to a broker, or a retry's backoff).
        "0003_job_dispatch",
        """
        ALTER TABLE jobs ADD COLUMN not_before BIGINT
        """,
    ),
    (
        # The knowledge graph (store/postgres/graph.py): typed relations between entities with their source memories
        # and validity window. Erasure as in SQLite: a relation whose last source memory is gone goes too, and an
        # entity that no memory and no relation involves any more leaves the entity table with its aliases.
        # ``relation_sources`` carries the user for row-level security.
        "0004_graph",
        """
        CREATE TABLE relations (
            id            BIGSERIAL PRIMARY KEY,
            user_id       TEXT NOT NULL,
            subject       TEXT NOT NULL,
            predicate     TEXT NOT NULL,
            object        TEXT NOT NULL,
            subject_type  TEXT NOT NULL DEFAULT 'other',
            object_type   TEXT NOT NULL DEFAULT 'other',
            valid_from    BIGINT NOT NULL,
            valid_until   BIGINT,
            superseded_by BIGINT
        );
        CREATE INDEX relations_user_subject ON relations (user_id, subject, predicate);
        CREATE INDEX relations_user_object ON relations (user_id, object);
        CREATE TABLE relation_sources (
            relation BIGINT NOT NULL REFERENCES relations (id) ON DELETE CASCADE,
            pk       BIGINT NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            user_id  TEXT NOT NULL,
            PRIMARY KEY (relation, pk)
        );
        CREATE INDEX relation_sources_pk ON relation_sources (pk);
        CREATE FUNCTION memlane_relation_orphan() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM relation_sources WHERE relation = OLD.relation) THEN
                DELETE FROM relations WHERE id = OLD.relation;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER relation_sources_orphan AFTER DELETE ON relation_sources
            FOR EACH ROW EXECUTE FUNCTION memlane_relation_orphan();
        CREATE FUNCTION memlane_relation_entities() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM entities WHERE user_id = OLD.user_id AND canonical IN (OLD.subject, OLD.object)
                AND NOT EXISTS (SELECT 1 FROM memory_entities e WHERE e.user_id = OLD.user_id
                                AND e.entity = entities.canonical)
                AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.user_id = OLD.user_id
                                AND (r.subject = entities.canonical OR r.object = entities.canonical));
            RETURN NULL;
        END $$;
        CREATE TRIGGER relations_orphan_entities AFTER DELETE ON relations
            FOR EACH ROW EXECUTE FUNCTION memlane_relation_entities();
        CREATE FUNCTION memlane_entity_orphan() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM memory_entities WHERE user_id = OLD.user_id AND entity = OLD.entity)
                AND NOT EXISTS (SELECT 1 FROM relations WHERE user_id = OLD.user_id
                                AND (subject = OLD.entity OR object = OLD.entity)) THEN
                DELETE FROM entities WHERE user_id = OLD.user_id AND canonical = OLD.entity;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memory_entities_orphan AFTER DELETE ON memory_entities
            FOR EACH ROW EXECUTE FUNCTION memlane_entity_orphan();
        DO $do$
        DECLARE t text;
        BEGIN
            FOREACH t IN ARRAY ARRAY['relations', 'relation_sources'] LOOP
                EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
                EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
                EXECUTE format(
                    'CREATE POLICY memlane_scope ON %I USING '
                    '(coalesce(current_setting(''memlane.scope'', true), '''') IN ('''', user_id))',
                    t
                );
            END LOOP;
        END $do$
        """,
    ),
    *LATER_MIGRATIONS,
    *TIMELINE_MIGRATIONS,
    *CONTEXT_MIGRATIONS,
)
