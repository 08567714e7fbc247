-- The demo's protected resource: every chunk of output a device's run
-- produces, written through the fence check (lease.check_fence in the same
-- transaction). A write the fence check refused is recorded too, with
-- accepted = false, in a transaction of its own, so the invariant checker can
-- count refusals and prove that no accepted row carries a stale fence.
CREATE SCHEMA IF NOT EXISTS leasetop_demo;

CREATE TABLE IF NOT EXISTS leasetop_demo.output (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    text        NOT NULL,
    session_id    text        NOT NULL,
    run_id        uuid        NOT NULL,
    fence         bigint      NOT NULL,
    device        text        NOT NULL,
    chunk         integer     NOT NULL,
    accepted      boolean     NOT NULL,
    -- The start of the writing transaction: before its fence check, so an
    -- accepted row's tx_started_at must fall inside its run's grant.
    tx_started_at timestamptz NOT NULL DEFAULT now(),
    written_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX IF NOT EXISTS output_session_idx ON leasetop_demo.output (account_id, session_id, id);
