-- leasetop schema, version 2: tables, the fence sequence and the schema version.
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
-- search_path, and the plpgsql functions' cached plans inline it. The table's
-- CHECKs below spell the same class out instead: a CHECK is prepared again for
-- every statement, and inlining a function there costs each renewal about 5 us
-- per column (upgrade_1.sql repeats them; data/schema_test.go checks all agree).
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

-- The live leases: one row per (account_id, session_id) while somebody holds, or
-- held and has not released, the session. Written only through lease.* functions.
--
-- run_id is the run's public id (lease.public_run_id of the id the run calls the
-- functions with, which stays its secret): reading this table gives nobody the
-- power to renew, release or fence-check another run's lease.
--
-- Ids and holder labels are bounded and pass lease.safe_text's test, so every
-- notification payload stays far below PostgreSQL's 8000-byte limit and no label
-- can carry a terminal escape sequence or reorder the text around it.
CREATE TABLE IF NOT EXISTS lease.session_lease (
    account_id  text        NOT NULL,
    session_id  text        NOT NULL,
    run_id      uuid        NOT NULL,
    holder      text        NOT NULL DEFAULT '',
    fence       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (account_id, session_id),
    CONSTRAINT session_lease_account_id_check CHECK (
        octet_length(account_id) BETWEEN 1 AND 512 AND account_id !~ '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]'),
    CONSTRAINT session_lease_session_id_check CHECK (
        octet_length(session_id) BETWEEN 1 AND 512 AND session_id !~ '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]'),
    CONSTRAINT session_lease_holder_check CHECK (
        octet_length(holder) <= 256 AND holder !~ '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]')
);

-- CREATE TABLE IF NOT EXISTS leaves an existing table's CHECKs as they were,
-- so a table made before the invisible characters were refused gets the CHECKs
-- above here (the test: their text holds the current character class). They
-- are added NOT VALID: every row written from now on is checked, and so is
-- every update of an older row, but the rows already there are not, because a
-- live lease whose ids or label hold a character refused now must not make the
-- migration fail. Such a lease cannot be renewed or released any more (the
-- functions refuse its key as they would a new one): it expires, and a superuser
-- (or lease_owner) can delete its row. When no row breaks them they are validated at once. A
-- table at version 1 is left to upgrade_1.sql, whose UPDATE of every row must
-- run under the CHECKs those rows were written under.
DO $$
DECLARE
    refused constant text := '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]';
    names constant pg_catalog.name[] := ARRAY['session_lease_account_id_check', 'session_lease_session_id_check', 'session_lease_holder_check'];
BEGIN
    IF (SELECT pg_catalog.count(*) FROM pg_catalog.pg_constraint
         WHERE conrelid OPERATOR(pg_catalog.=) 'lease.session_lease'::pg_catalog.regclass
           AND conname OPERATOR(pg_catalog.=) ANY (names)
           AND pg_catalog.strpos(pg_catalog.pg_get_constraintdef(oid), refused) OPERATOR(pg_catalog.>) 0)
       OPERATOR(pg_catalog.=) 3 THEN
        RETURN;
    END IF;
    IF (SELECT version FROM lease.schema_version) OPERATOR(pg_catalog.=) 1 THEN
        RETURN; -- upgrade_1.sql replaces them after it has rewritten the rows
    END IF;
    EXECUTE pg_catalog.format($sql$
        ALTER TABLE lease.session_lease
            DROP CONSTRAINT IF EXISTS session_lease_account_id_check,
            DROP CONSTRAINT IF EXISTS session_lease_session_id_check,
            DROP CONSTRAINT IF EXISTS session_lease_holder_check,
            ADD CONSTRAINT session_lease_account_id_check CHECK (
                octet_length(account_id) BETWEEN 1 AND 512 AND account_id !~ %1$L) NOT VALID,
            ADD CONSTRAINT session_lease_session_id_check CHECK (
                octet_length(session_id) BETWEEN 1 AND 512 AND session_id !~ %1$L) NOT VALID,
            ADD CONSTRAINT session_lease_holder_check CHECK (
                octet_length(holder) <= 256 AND holder !~ %1$L) NOT VALID$sql$, refused);
    BEGIN
        ALTER TABLE lease.session_lease
            VALIDATE CONSTRAINT session_lease_account_id_check,
            VALIDATE CONSTRAINT session_lease_session_id_check,
            VALIDATE CONSTRAINT session_lease_holder_check;
    EXCEPTION WHEN check_violation THEN
        RAISE WARNING 'lease.session_lease holds leases whose ids or holder label contain characters refused now: their CHECKs stay NOT VALID; those leases can no longer be renewed or released and will expire';
    END;
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
        'handover_asked', 'handed_over', 'handover_declined', 'handover_expired'];
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
CREATE TABLE IF NOT EXISTS lease.event (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
);

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

CREATE INDEX IF NOT EXISTS event_session_idx ON lease.event (account_id, session_id, id);
CREATE INDEX IF NOT EXISTS event_at_idx ON lease.event (at);
-- History by time per session (data.EventsBetween's lanes, data.OwnersAt's
-- last event before an instant): a range of one session's events by time.
CREATE INDEX IF NOT EXISTS event_key_at_idx ON lease.event (account_id, session_id, at, id);

-- What lease.acquire returns: the grant a run holds.
DO $$
BEGIN
    IF to_regtype('lease.grant') IS NULL THEN
        CREATE TYPE lease.grant AS (run_id uuid, fence bigint, expires_at timestamptz);
    END IF;
END
$$;
