-- leasetop schema, version 1: tables, the fence sequence and the schema version.
-- Applied by `leasetop migrate` inside one transaction; every statement is idempotent.

CREATE SCHEMA IF NOT EXISTS lease;

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
-- Ids and holder labels are bounded and free of control characters, so every
-- notification payload stays far below PostgreSQL's 8000-byte limit and no label
-- can carry a terminal escape sequence.
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
        octet_length(account_id) BETWEEN 1 AND 512 AND account_id !~ '[[:cntrl:]]'),
    CONSTRAINT session_lease_session_id_check CHECK (
        octet_length(session_id) BETWEEN 1 AND 512 AND session_id !~ '[[:cntrl:]]'),
    CONSTRAINT session_lease_holder_check CHECK (
        octet_length(holder) <= 256 AND holder !~ '[[:cntrl:]]')
);

-- The append-only history: one row per ownership transition (renewals are not
-- stored). Written by the triggers in triggers.sql and by lease.renew.
CREATE TABLE IF NOT EXISTS lease.event (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL,
    kind            text        NOT NULL CHECK (kind IN (
                        'acquired', 'taken_over', 'released', 'force_released',
                        'renew_rejected', 'truncated')),
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
