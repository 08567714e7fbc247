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

-- What each device process says about itself, for the monitor's devices
-- pane: one row per process. The process writes status (a JSON document:
-- each open conversation's state, what it believes it holds, its counters,
-- with times as ages so that reported_at places them on the server's clock)
-- and reported_at, at least every second. The demo that runs it writes the
-- rest: slot and generation when it starts the process, and signal, what
-- it did to it (frozen, resumed, killed) or how it ended (exited), which a
-- stopped or dead process cannot say.
CREATE TABLE IF NOT EXISTS leasetop_demo.device (
    account_id  text        NOT NULL,
    device      text        NOT NULL,
    pid         integer     NOT NULL,
    slot        integer     NOT NULL DEFAULT 0,
    generation  integer     NOT NULL DEFAULT 1,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    status      jsonb,
    reported_at timestamptz,
    signal      text,
    signal_why  text,
    signal_at   timestamptz,
    PRIMARY KEY (account_id, device, pid)
);

-- What each device asked the server and what it answered (granted, busy,
-- accepted or refused by the fence check, a zombie's rejected renewal), the
-- last 200 per device, for the devices pane's detail view.
CREATE TABLE IF NOT EXISTS leasetop_demo.attempt (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id text        NOT NULL,
    device     text        NOT NULL,
    pid        integer     NOT NULL,
    at         timestamptz NOT NULL,
    session_id text,
    action     text        NOT NULL,
    run_id     uuid,
    fence      bigint,
    answer     text        NOT NULL,
    ok         boolean     NOT NULL
);

CREATE INDEX IF NOT EXISTS attempt_device_idx ON leasetop_demo.attempt (account_id, device, id);
