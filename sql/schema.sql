-- leasetop schema, version 2: tables, the fence sequence and the schema version.
-- Applied by `leasetop migrate` inside one transaction; every statement is idempotent.
-- A database at version 1 gets the one-time steps in upgrade_1.sql as well.

-- prelude.sql has created the schema; this file runs as its owner.

-- safe_text reports whether s can be shown on a terminal as it is: no control
-- character (C0, DEL, C1) and none of the characters that reorder or break the
-- rest of a line (the bidirectional marks, embeddings, overrides and isolates,
-- and the line and paragraph separators). The same set internal/termtext
-- escapes and data.Validate* refuse. Ids, holder labels and reasons must pass.
-- No type or unqualified operator in its body, so it is safe without a pinned
-- search_path, and the plpgsql functions' cached plans inline it. The table's
-- CHECKs below spell the same class out instead: a CHECK is prepared again for
-- every statement, and inlining a function there costs each renewal about 5 us
-- per column (upgrade_1.sql repeats them; data/schema_test.go checks all agree).
CREATE OR REPLACE FUNCTION lease.safe_text(s text)
RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
    SELECT s OPERATOR(pg_catalog.!~) '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]'
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
        octet_length(account_id) BETWEEN 1 AND 512 AND account_id !~ '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]'),
    CONSTRAINT session_lease_session_id_check CHECK (
        octet_length(session_id) BETWEEN 1 AND 512 AND session_id !~ '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]'),
    CONSTRAINT session_lease_holder_check CHECK (
        octet_length(holder) <= 256 AND holder !~ '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]')
);

-- What an event row may say happened. A domain, not a CHECK on the column: a
-- table's CHECK is read and prepared again for every statement that inserts,
-- which cost each event row about a fifth of its insert, while a domain's
-- check is prepared once per session.
DO $$
BEGIN
    IF to_regtype('lease.event_kind') IS NULL THEN
        CREATE DOMAIN lease.event_kind AS text CHECK (VALUE IN (
            'acquired', 'taken_over', 'released', 'force_released', 'renew_rejected', 'truncated'));
    END IF;
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

-- What lease.acquire returns: the grant a run holds.
DO $$
BEGIN
    IF to_regtype('lease.grant') IS NULL THEN
        CREATE TYPE lease.grant AS (run_id uuid, fence bigint, expires_at timestamptz);
    END IF;
END
$$;
