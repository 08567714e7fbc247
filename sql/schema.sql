-- leasetop schema, version 5: tables, the fence sequence and the schema version.
-- Applied by `leasetop migrate` inside one transaction; every statement is idempotent.
-- A database at version 1 gets the one-time steps in upgrade_1.sql as well.

-- prelude.sql has created the schema; this file runs as its owner.

-- safe_text reports whether s can be shown on a terminal as it is: no control
-- character (C0, DEL, C1), none of the characters that reorder or break the
-- rest of a line (the bidirectional marks, embeddings, overrides and isolates,
-- and the line and paragraph separators), and none of the invisible ones, by
-- which two ids that differ would look the same (the zero-width spaces and
-- joiners, the soft hyphen, the combining grapheme joiner, the byte order mark,
-- U+2060..U+206F, the Hangul fillers, the Khmer inherent vowels, the Mongolian
-- vowel separator, the shorthand and musical format controls, the tag
-- characters: Unicode's default-ignorable characters but the variation
-- selectors, which emoji need). The same set internal/termtext escapes and
-- data.Validate* refuse. Ids, holder labels and reasons must pass.
-- No type or unqualified operator in its body, so it is safe without a pinned
-- search_path, and the plpgsql functions' cached plans inline it. The domains
-- below spell the same class out instead (data/schema_test.go checks all
-- agree).
CREATE OR REPLACE FUNCTION lease.safe_text(s text)
RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
    SELECT s OPERATOR(pg_catalog.!~) '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]'
$fn$;

-- The version this database's lease schema is at. One row; leasetop refuses to run
-- against a missing, older or newer version.
CREATE TABLE IF NOT EXISTS lease.schema_version (
    version    integer     NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    singleton  boolean     NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton)
);

-- One global sequence for fencing tokens: a token is drawn on acquire and takeover
-- only (never on renew), so it rises strictly per key across takeovers and deletes.
CREATE SEQUENCE IF NOT EXISTS lease.fence_seq AS bigint;

-- The texts a lease row holds, as domains: lease.id_text (account and
-- session ids: 1 to 512 bytes), lease.holder_text (holder labels: at most
-- 256 bytes) and lease.attachment_text (preempt.sql's attachments: at most
-- 1024 bytes), each refusing what lease.safe_text refuses. Not CHECKs on the
-- table: PostgreSQL reads a table's CHECKs from their stored text and
-- prepares them again for every statement that writes a row, a renewal
-- included, which only sets two timestamps; that was a tenth of a renewal's
-- server CPU (issue 29). A domain's check is prepared once per session, and
-- runs only where a value becomes the domain's: an acquire's INSERT checks its
-- ids and label, a renewal checks nothing. Their constraints are added by
-- lease.use_text_domains below.
DO $$
BEGIN
    IF to_regtype('lease.id_text') IS NULL THEN
        CREATE DOMAIN lease.id_text AS text;
    END IF;
    IF to_regtype('lease.holder_text') IS NULL THEN
        CREATE DOMAIN lease.holder_text AS text;
    END IF;
    IF to_regtype('lease.attachment_text') IS NULL THEN
        CREATE DOMAIN lease.attachment_text AS text;
    END IF;
END
$$;

-- The live leases: one row per (account_id, session_id) while somebody holds, or
-- held and has not released, the session. Written only through lease.* functions.
--
-- run_id is the run's public id (lease.public_run_id of the id the run calls the
-- functions with, which stays its secret): reading this table gives nobody the
-- power to renew, release or fence-check another run's lease.
--
-- Ids and holder labels are bounded and pass lease.safe_text's test (the
-- domains above), so every notification payload stays far below PostgreSQL's
-- 8000-byte limit and no label can carry a terminal escape sequence or reorder
-- the text around it.
CREATE TABLE IF NOT EXISTS lease.session_lease (
    account_id  lease.id_text     NOT NULL,
    session_id  lease.id_text     NOT NULL,
    run_id      uuid              NOT NULL,
    holder      lease.holder_text NOT NULL DEFAULT '',
    fence       bigint            NOT NULL,
    acquired_at timestamptz       NOT NULL,
    renewed_at  timestamptz       NOT NULL,
    expires_at  timestamptz       NOT NULL,
    PRIMARY KEY (account_id, session_id)
);

-- use_text_domains gives lease.session_lease's texts their domains and the
-- domains their current constraints, and reports whether the rows pass them.
--
-- A table made before version 5 held CHECKs instead: they are dropped and its
-- columns take the domains while the domains have no constraint yet, so that
-- PostgreSQL neither rewrites the table nor reads it (a domain with a
-- constraint would make ALTER COLUMN TYPE rewrite every row; the key index is
-- kept, its operator class is text's). A domain whose constraint is missing or
-- spells an older class (before the invisible characters were refused) gets
-- the current one NOT VALID: every value written from now on is checked, but
-- a live lease whose ids or label hold a character refused now must not make
-- the migration fail. Such a lease cannot be renewed or released any more (the
-- functions refuse its key as they would a new one): it expires, and a
-- superuser (or lease_owner) can delete its row. When no row breaks them the
-- constraints are validated at once. schema.sql calls it; a table at version
-- 1 is left to upgrade_1.sql, whose UPDATE of every row must run under the
-- CHECKs those rows were written under.
CREATE OR REPLACE FUNCTION lease.use_text_domains()
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    refused constant text := '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]';
    -- each column, the table's CHECK it had, and its domain
    columns constant text[][] := ARRAY[
        ['account_id', 'session_lease_account_id_check', 'id_text'],
        ['session_id', 'session_lease_session_id_check', 'id_text'],
        ['holder', 'session_lease_holder_check', 'holder_text'],
        ['attachment', 'session_lease_attachment_check', 'attachment_text']];
    -- each domain and its rule; its constraint is named <domain>_check
    domains constant text[][] := ARRAY[
        ['id_text', 'octet_length(VALUE) BETWEEN 1 AND 512'],
        ['holder_text', 'octet_length(VALUE) <= 256'],
        ['attachment_text', 'octet_length(VALUE) <= 1024']];
    c text[];
    d text[];
    valid boolean := true;
BEGIN
    FOREACH c SLICE 1 IN ARRAY columns LOOP
        -- NULL, so no step, for a column not there yet (attachment before preempt.sql)
        IF (SELECT a.atttypid FROM pg_attribute a
             WHERE a.attrelid = 'lease.session_lease'::regclass AND a.attname = c[1] AND NOT a.attisdropped)
           <> format('lease.%I', c[3])::regtype THEN
            EXECUTE format('ALTER DOMAIN lease.%I DROP CONSTRAINT IF EXISTS %I', c[3], c[3] || '_check');
            EXECUTE format('ALTER TABLE lease.session_lease DROP CONSTRAINT IF EXISTS %I, ALTER COLUMN %I TYPE lease.%I',
                           c[2], c[1], c[3]);
        END IF;
    END LOOP;
    FOREACH d SLICE 1 IN ARRAY domains LOOP
        IF EXISTS (SELECT FROM pg_constraint k
                    WHERE k.contypid = format('lease.%I', d[1])::regtype AND k.conname = d[1] || '_check'
                      AND strpos(pg_get_constraintdef(k.oid), refused) > 0) THEN
            CONTINUE;
        END IF;
        EXECUTE format('ALTER DOMAIN lease.%I DROP CONSTRAINT IF EXISTS %I', d[1], d[1] || '_check');
        EXECUTE format('ALTER DOMAIN lease.%I ADD CONSTRAINT %I CHECK (%s AND VALUE !~ %L) NOT VALID',
                       d[1], d[1] || '_check', d[2], refused);
        BEGIN
            EXECUTE format('ALTER DOMAIN lease.%I VALIDATE CONSTRAINT %I', d[1], d[1] || '_check');
        EXCEPTION WHEN check_violation THEN
            valid := false;
        END;
    END LOOP;
    IF NOT valid THEN
        RAISE WARNING 'lease.session_lease holds leases whose ids or holder label contain characters refused now: their domains'' constraints stay NOT VALID; those leases can no longer be renewed or released and will expire';
    END IF;
    RETURN valid;
END
$fn$;

DO $$
BEGIN
    IF (SELECT version FROM lease.schema_version) IS DISTINCT FROM 1 THEN
        PERFORM lease.use_text_domains();
    END IF;
END
$$;

-- What an event row may say happened. A domain, not a CHECK on the column: a
-- table's CHECK is read and prepared again for every statement that inserts,
-- which cost each event row about a fifth of its insert, while a domain's
-- check is prepared once per session.
--
-- A domain made by an earlier version lists fewer kinds: its CHECK is
-- replaced by the current list (by name, event_kind_check) when it lacks one
-- of them. Added NOT VALID: the list only grows, so the rows already there
-- pass, and a long history is not scanned under the domain's lock.
DO $$
DECLARE
    kinds constant text[] := ARRAY['acquired', 'taken_over', 'released', 'force_released', 'renew_rejected', 'truncated',
        'preempted', 'queue_joined', 'queue_left',
        'handover_asked', 'handed_over', 'handover_declined', 'handover_expired',
        'limit_set', 'limit_removed', 'limit_refused',
        'message_sent', 'message_delivered', 'message_carried', 'message_acked', 'message_expired'];
    kind text;
    missing boolean := false;
BEGIN
    IF to_regtype('lease.event_kind') IS NULL THEN
        EXECUTE pg_catalog.format('CREATE DOMAIN lease.event_kind AS text CONSTRAINT event_kind_check CHECK (VALUE = ANY (%L::text[]))', kinds);
        RETURN;
    END IF;
    FOREACH kind IN ARRAY kinds LOOP
        BEGIN
            PERFORM kind::lease.event_kind;
        EXCEPTION WHEN check_violation THEN
            missing := true;
        END;
    END LOOP;
    IF NOT missing THEN
        RETURN;
    END IF;
    ALTER DOMAIN lease.event_kind DROP CONSTRAINT IF EXISTS event_kind_check;
    EXECUTE pg_catalog.format('ALTER DOMAIN lease.event_kind ADD CONSTRAINT event_kind_check CHECK (VALUE = ANY (%L::text[])) NOT VALID', kinds);
END
$$;

-- The append-only history: one row per ownership transition (renewals are not
-- stored). Written by the triggers in triggers.sql and by lease.renew.
--
-- Partitioned by range of at, one partition per UTC day (partition.sql makes
-- them ahead, moves what landed in the DEFAULT partition, and drops the days
-- older than the retention). A day: at 1000 transitions/s it is 86 M rows,
-- the unit retention drops at once, and a month is about 30 partitions, few
-- enough that a read by id, which cannot prune by at, stays one index probe
-- per partition. The ids still come from the one identity (lease.event_id_seq):
-- every consumer reads by id. A primary key would have to include at, so each
-- partition has its own unique index on id instead (its name ends in _id_key),
-- and the identity keeps ids unique across partitions. A missing partition
-- never fails a transition: its row lands in lease.event_default.
CREATE TABLE IF NOT EXISTS lease.event (
    id              bigint      GENERATED ALWAYS AS IDENTITY,
    at              timestamptz NOT NULL,
    kind            lease.event_kind NOT NULL,
    account_id      text        NOT NULL DEFAULT '',
    session_id      text        NOT NULL DEFAULT '',
    run_id          uuid,
    prev_run_id     uuid,
    fence           bigint,
    prev_fence      bigint,
    expires_at      timestamptz,
    prev_expires_at timestamptz,
    holder          text,
    actor           text        NOT NULL DEFAULT session_user,
    reason          text
) PARTITION BY RANGE (at);

-- A database created before the domain checked kind in the table: the same
-- values, so the column takes the domain without a rewrite (it is checked).
DO $$
BEGIN
    IF (SELECT atttypid FROM pg_attribute
         WHERE attrelid = 'lease.event'::regclass AND attname = 'kind') <> 'lease.event_kind'::regtype THEN
        ALTER TABLE lease.event DROP CONSTRAINT IF EXISTS event_kind_check;
        ALTER TABLE lease.event ALTER COLUMN kind TYPE lease.event_kind;
    END IF;
END
$$;

-- A history made before version 4 is a plain table: it becomes the first
-- partition, in place, holding every event up to the end of the current UTC
-- day (named event_until_<that day>). Nothing is copied and no index is
-- built: the table keeps its rows, its indexes (renamed; the parent's below
-- adopt them) and its primary key (as its unique index on id). The identity
-- moves to the new parent with the sequence's state, so the next id is above
-- every old one. ATTACH reads the old table once to check the bound, holding
-- its lock: transitions wait for that read (docs/RELIABILITY.md).
DO $$
DECLARE
    last_id bigint;
    called boolean;
    upto timestamptz;
    legacy text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'lease.event'::regclass) <> 'r' THEN
        RETURN;
    END IF;
    SELECT last_value, is_called INTO last_id, called FROM lease.event_id_seq;
    SELECT date_trunc('day', greatest(max(at), clock_timestamp()), 'UTC') + interval '1 day' INTO upto FROM lease.event;
    legacy := 'event_until_' || to_char(upto AT TIME ZONE 'UTC', 'YYYYMMDD');
    ALTER TABLE lease.event ALTER COLUMN id DROP IDENTITY;
    EXECUTE format('ALTER TABLE lease.event RENAME TO %I', legacy);
    EXECUTE format('ALTER TABLE lease.%I RENAME CONSTRAINT event_pkey TO %I', legacy, legacy || '_id_key');
    EXECUTE format('ALTER INDEX IF EXISTS lease.event_session_idx RENAME TO %I', legacy || '_session_idx');
    EXECUTE format('ALTER INDEX IF EXISTS lease.event_at_idx RENAME TO %I', legacy || '_at_idx');
    EXECUTE format('ALTER INDEX IF EXISTS lease.event_key_at_idx RENAME TO %I', legacy || '_key_at_idx');
    EXECUTE format('CREATE TABLE lease.event (LIKE lease.%I INCLUDING DEFAULTS) PARTITION BY RANGE (at)', legacy);
    ALTER TABLE lease.event ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
    PERFORM setval('lease.event_id_seq', last_id, called);
    CREATE INDEX event_session_idx ON lease.event (account_id, session_id, id);
    CREATE INDEX event_at_idx ON lease.event (at);
    CREATE INDEX event_key_at_idx ON lease.event (account_id, session_id, at, id);
    EXECUTE format('ALTER TABLE lease.event ATTACH PARTITION lease.%I FOR VALUES FROM (MINVALUE) TO (%L)', legacy, upto);
END
$$;

CREATE INDEX IF NOT EXISTS event_session_idx ON lease.event (account_id, session_id, id);
CREATE INDEX IF NOT EXISTS event_at_idx ON lease.event (at);
-- History by time per session (data.EventsBetween's lanes, data.OwnersAt's
-- last event before an instant): a range of one session's events by time.
CREATE INDEX IF NOT EXISTS event_key_at_idx ON lease.event (account_id, session_id, at, id);

-- Where an event lands when no partition covers its time (the maintenance
-- has not run ahead of the clock): lease.maintain_events moves such rows
-- into their day's partition.
CREATE TABLE IF NOT EXISTS lease.event_default PARTITION OF lease.event DEFAULT;
CREATE UNIQUE INDEX IF NOT EXISTS event_default_id_key ON lease.event_default (id);

-- What lease.acquire returns: the grant a run holds.
DO $$
BEGIN
    IF to_regtype('lease.grant') IS NULL THEN
        CREATE TYPE lease.grant AS (run_id uuid, fence bigint, expires_at timestamptz);
    END IF;
END
$$;
