"""The PostgreSQL store's later migrations (from 0005), appended to ``schema.MIGRATIONS`` in order."""

from __future__ import annotations

from typing import Final

LATER_MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    (
        # Injection flags and the sealed originals of redacted PII (see memlane.security), keyed by memory id (a flag
        # is written before its memory: fail closed). Both go with the memory, unless it moved to the archive, and
        # with the archived copy.
        "0005_security",
        """
        CREATE TABLE memory_flags (
            user_id    TEXT NOT NULL,
            memory_id  TEXT NOT NULL,
            score      DOUBLE PRECISION NOT NULL,
            reasons    TEXT NOT NULL DEFAULT '[]',
            detector   TEXT NOT NULL,
            flagged_at BIGINT NOT NULL,
            PRIMARY KEY (user_id, memory_id)
        );
        CREATE INDEX memory_flags_at ON memory_flags (flagged_at DESC, memory_id COLLATE "C");
        CREATE TABLE pii_originals (
            user_id   TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            sealed    BYTEA NOT NULL,
            kinds     TEXT NOT NULL DEFAULT '[]',
            at        BIGINT NOT NULL,
            PRIMARY KEY (user_id, memory_id)
        );
        CREATE FUNCTION memlane_security_memory_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM archive WHERE archive.id = OLD.id) THEN
                DELETE FROM memory_flags WHERE user_id = OLD.user_id AND memory_id = OLD.id;
                DELETE FROM pii_originals WHERE user_id = OLD.user_id AND memory_id = OLD.id;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memories_security_delete AFTER DELETE ON memories
            FOR EACH ROW EXECUTE FUNCTION memlane_security_memory_delete();
        CREATE FUNCTION memlane_security_archive_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM memories WHERE memories.id = OLD.id) THEN
                DELETE FROM memory_flags WHERE user_id = OLD.user_id AND memory_id = OLD.id;
                DELETE FROM pii_originals WHERE user_id = OLD.user_id AND memory_id = OLD.id;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER archive_security_delete AFTER DELETE ON archive
            FOR EACH ROW EXECUTE FUNCTION memlane_security_archive_delete();
        DO $do$
        DECLARE t text;
        BEGIN
            FOREACH t IN ARRAY ARRAY['memory_flags', 'pii_originals'] LOOP
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
    (
        # The change log of the per-user read models (store/postgres/hot_feed.py): a row per memory inserted or
        # deleted, per change of a column the read path uses (the text and index text, kind, session, position, time,
        # importance, event times, labels, validity) and per change of its entity links, written by the transaction
        # of the change, whoever wrote it. ``xid`` is that transaction's id: entries become visible in commit order,
        # not in ``seq`` order, and a reader replays by transaction id (see hot_feed). The floor is the transaction
        # id below which a user's entries may have been pruned.
        "0006_fact_log",
        """
        CREATE TABLE fact_log (
            seq     BIGSERIAL PRIMARY KEY,
            user_id TEXT NOT NULL,
            pk      BIGINT NOT NULL,
            xid     BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)
        );
        CREATE INDEX fact_log_user_xid ON fact_log (user_id, xid);
        CREATE TABLE fact_log_floor (
            user_id TEXT PRIMARY KEY,
            xid     BIGINT NOT NULL
        );
        CREATE FUNCTION memlane_fact_log() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                INSERT INTO fact_log (user_id, pk) VALUES (OLD.user_id, OLD.pk);
            ELSE
                INSERT INTO fact_log (user_id, pk) VALUES (NEW.user_id, NEW.pk);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memories_fact_insert AFTER INSERT OR DELETE ON memories
            FOR EACH ROW EXECUTE FUNCTION memlane_fact_log();
        CREATE TRIGGER memories_fact_update AFTER UPDATE OF
            text, body, kind, session_id, position, ts, importance, event_time, event_end, category, intent,
            valid_until ON memories
            FOR EACH ROW WHEN (
                old.text IS DISTINCT FROM new.text OR old.body IS DISTINCT FROM new.body
                OR old.kind IS DISTINCT FROM new.kind OR old.session_id IS DISTINCT FROM new.session_id
                OR old.position IS DISTINCT FROM new.position OR old.ts IS DISTINCT FROM new.ts
                OR old.importance IS DISTINCT FROM new.importance OR old.event_time IS DISTINCT FROM new.event_time
                OR old.event_end IS DISTINCT FROM new.event_end OR old.category IS DISTINCT FROM new.category
                OR old.intent IS DISTINCT FROM new.intent
                OR (old.valid_until IS NULL) IS DISTINCT FROM (new.valid_until IS NULL)
            ) EXECUTE FUNCTION memlane_fact_log();
        CREATE TRIGGER memory_entities_fact AFTER INSERT OR UPDATE OR DELETE ON memory_entities
            FOR EACH ROW EXECUTE FUNCTION memlane_fact_log();
        DO $do$
        DECLARE t text;
        BEGIN
            FOREACH t IN ARRAY ARRAY['fact_log', 'fact_log_floor'] LOOP
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
    (
        # Access counts since a memory's row was written. Every search's hits are counted, and an UPDATE of a
        # memories row is rarely HOT (with its vector a row fills a good part of a page), so each counted hit
        # re-inserted its row into every index of the table, the HNSW graph included: 0.3-0.5 ms a row, 100-300 ms
        # a flush of a search batch's counts, paid by the search that flushed. Here a count is one narrow row.
        # A memory's count is memories.access_count plus this row's; its last access the later of the two.
        "0007_memory_usage",
        """
        CREATE TABLE memory_usage (
            pk            BIGINT PRIMARY KEY REFERENCES memories (pk) ON DELETE CASCADE,
            user_id       TEXT NOT NULL,
            access_count  BIGINT NOT NULL,
            last_accessed BIGINT NOT NULL
        ) WITH (fillfactor = 80);
        ALTER TABLE memory_usage ENABLE ROW LEVEL SECURITY;
        ALTER TABLE memory_usage FORCE ROW LEVEL SECURITY;
        CREATE POLICY memlane_scope ON memory_usage USING
            (coalesce(current_setting('memlane.scope', true), '') IN ('', user_id));
        """,
    ),
    (
        # A random token per user, set anew by every write to the user's entity table, whoever writes it: a process
        # keeps the table it read while the token holds (memlane.store.alias_tables).
        "0008_entity_versions",
        """
        CREATE TABLE entity_versions (
            user_id TEXT PRIMARY KEY,
            token   BIGINT NOT NULL
        );
        INSERT INTO entity_versions
            SELECT user_id, (random() * 9.2e18)::bigint FROM (SELECT DISTINCT user_id FROM entities) u;
        ALTER TABLE entity_versions ENABLE ROW LEVEL SECURITY;
        ALTER TABLE entity_versions FORCE ROW LEVEL SECURITY;
        CREATE POLICY memlane_scope ON entity_versions USING
            (coalesce(current_setting('memlane.scope', true), '') IN ('', user_id));
        CREATE FUNCTION memlane_entity_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
                INSERT INTO entity_versions AS v VALUES (OLD.user_id, (random() * 9.2e18)::bigint)
                ON CONFLICT (user_id) DO UPDATE SET token = excluded.token;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                INSERT INTO entity_versions AS v VALUES (NEW.user_id, (random() * 9.2e18)::bigint)
                ON CONFLICT (user_id) DO UPDATE SET token = excluded.token;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER entities_version AFTER INSERT OR UPDATE OR DELETE ON entities
            FOR EACH ROW EXECUTE FUNCTION memlane_entity_version();
        """,
    ),
    # The memories that taught each alias, as relations have their sources: an alias whose last source is erased
    # leaves the entity table; never an entity's own row. Aliases from before have no sources and stay.
    (
        "0009_alias_sources",
        """
        CREATE TABLE alias_sources (
            pk      BIGINT NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            alias   TEXT NOT NULL,
            PRIMARY KEY (pk, alias)
        );
        CREATE INDEX alias_sources_user_alias ON alias_sources (user_id, alias);
        ALTER TABLE alias_sources ENABLE ROW LEVEL SECURITY;
        ALTER TABLE alias_sources FORCE ROW LEVEL SECURITY;
        CREATE POLICY memlane_scope ON alias_sources USING
            (coalesce(current_setting('memlane.scope', true), '') IN ('', user_id));
        CREATE FUNCTION memlane_alias_orphan() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM alias_sources WHERE user_id = OLD.user_id AND alias = OLD.alias) THEN
                DELETE FROM entities WHERE user_id = OLD.user_id AND alias = OLD.alias AND alias <> canonical;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER alias_sources_orphan AFTER DELETE ON alias_sources
            FOR EACH ROW EXECUTE FUNCTION memlane_alias_orphan();
        """,
    ),
    (
        # The REST server's API keys (only the SHA-256 of each key) and its append-only audit log, shared by every
        # `memlane serve` process on this database (memlane.server.admin_pg). The library never reads them, and no
        # export carries them.
        "0010_server_admin",
        """
        CREATE TABLE server_keys (
            prefix     TEXT PRIMARY KEY,
            hash       TEXT NOT NULL,
            tenant     TEXT NOT NULL,
            scopes     TEXT NOT NULL,
            name       TEXT NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL,
            revoked_at TIMESTAMPTZ
        );
        CREATE TABLE server_audit (
            seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at         TIMESTAMPTZ NOT NULL,
            key_prefix TEXT,
            tenant     TEXT NOT NULL,
            action     TEXT NOT NULL,
            user_id    TEXT,
            target     TEXT,
            status     INTEGER NOT NULL,
            detail     TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX server_audit_tenant ON server_audit (tenant, seq);
        CREATE FUNCTION memlane_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'the audit log is append-only';
        END $$;
        CREATE TRIGGER server_audit_append_only BEFORE UPDATE OR DELETE ON server_audit
            FOR EACH ROW EXECUTE FUNCTION memlane_audit_append_only();
        """,
    ),
    (
        "0011_passages",
        """
        CREATE TABLE passages (
            pk      BIGINT NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            start   INTEGER NOT NULL,
            stop    INTEGER NOT NULL,
            vec     BYTEA NOT NULL,
            PRIMARY KEY (pk, ordinal)
        );
        CREATE INDEX passages_user ON passages (user_id, pk);
        CREATE TABLE passage_versions (
            user_id TEXT PRIMARY KEY,
            token   BIGINT NOT NULL
        );
        ALTER TABLE passages ENABLE ROW LEVEL SECURITY;
        ALTER TABLE passages FORCE ROW LEVEL SECURITY;
        CREATE POLICY memlane_scope ON passages USING
            (coalesce(current_setting('memlane.scope', true), '') IN ('', user_id));
        ALTER TABLE passage_versions ENABLE ROW LEVEL SECURITY;
        ALTER TABLE passage_versions FORCE ROW LEVEL SECURITY;
        CREATE POLICY memlane_scope ON passage_versions USING
            (coalesce(current_setting('memlane.scope', true), '') IN ('', user_id));
        CREATE FUNCTION memlane_passage_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO passage_versions AS v
            VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.user_id ELSE NEW.user_id END, (random() * 9.2e18)::bigint)
            ON CONFLICT (user_id) DO UPDATE SET token = excluded.token;
            RETURN NULL;
        END $$;
        CREATE TRIGGER passages_version AFTER INSERT OR DELETE ON passages
            FOR EACH ROW EXECUTE FUNCTION memlane_passage_version();
        CREATE FUNCTION memlane_passages_text() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM passages WHERE pk = NEW.pk;
            RETURN NULL;
        END $$;
        CREATE TRIGGER passages_text_changed AFTER UPDATE OF text ON memories
            FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION memlane_passages_text();
        """,
    ),
)
