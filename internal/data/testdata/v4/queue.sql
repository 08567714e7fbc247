-- leasetop queue: a durable FIFO of waiters per session (issue 26, item 1).
--
-- A waiter takes a ticket (lease.enqueue) with its secret run id; the ticket
-- records the public run id, a label, when it joined and an expiry on the
-- database clock, and the waiter keeps it alive like a lease (lease.enqueue
-- again, or lease.renew_ticket). While the session has a live ticket, a free
-- lease goes only to the run of the head ticket (the oldest live one):
-- lease.acquire asks lease.queue_admits, and a grant to a queued run ends its
-- ticket (lease.queue_granted). A ticket nobody renews expires and is
-- skipped; lease.cancel_ticket ends one at once and notifies, so the next
-- waiter tries at once.
--
-- Bounded like every write a caller can make: at most 64 live tickets per
-- session (a full queue is one error, SQLSTATE 54000, and nothing written);
-- a ticket is written only by a run that could compete for the key (someone
-- else holds it, or a queue exists: a free key without a queue is simply
-- acquired); one queue_joined event per ticket taken and one queue_left per
-- ticket ended (granted, cancelled or expired); renewing a ticket or taking
-- it again while it lives writes no event.
--
-- The functions follow functions.sql: SECURITY DEFINER, the pinned
-- search_path, one clock_timestamp() per call.

-- The live tickets. id orders the queue: enqueues of one session are
-- serialised on its lease.session_queue row, so ids rise in the order the
-- tickets committed.
CREATE TABLE IF NOT EXISTS lease.queue_ticket (
    account_id text        NOT NULL,
    session_id text        NOT NULL,
    id         bigint      GENERATED ALWAYS AS IDENTITY,
    run_id     uuid        NOT NULL, -- public run id (lease.public_run_id)
    holder     text        NOT NULL DEFAULT '',
    joined_at  timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, session_id, id),
    UNIQUE (account_id, session_id, run_id),
    CHECK (octet_length(account_id) BETWEEN 1 AND 512 AND octet_length(session_id) BETWEEN 1 AND 512
           AND octet_length(holder) <= 256)
);

-- One row per session that has had a queue: the lock that serialises its
-- enqueues (the cap and the order). Holds no data.
CREATE TABLE IF NOT EXISTS lease.session_queue (
    account_id text NOT NULL,
    session_id text NOT NULL,
    PRIMARY KEY (account_id, session_id)
);

-- What lease.enqueue and lease.renew_ticket return: the caller's place.
-- ahead is the number of live tickets before the caller's; expires_at its
-- ticket's expiry, NULL when it holds no ticket (enqueue: the key is free
-- and has no queue, or the caller holds the lease: acquire it);
-- ahead_expires_at the earliest expiry among the tickets ahead (when the
-- caller may move up if they are not renewed), NULL when none.
DO $$
BEGIN
    IF to_regtype('lease.queue_place') IS NULL THEN
        CREATE TYPE lease.queue_place AS (ahead integer, expires_at timestamptz, ahead_expires_at timestamptz);
    END IF;
END
$$;

-- queue_limit is the cap on a session's live tickets.
CREATE OR REPLACE FUNCTION lease.queue_limit()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT 64
$fn$;

-- queue_event records one ticket's queue_joined or queue_left event and
-- notifies it. Granted to nobody; called by the functions below.
CREATE OR REPLACE FUNCTION lease.queue_event(kind text, t lease.queue_ticket, why text, at_ timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
BEGIN
    IF lease.follow_timeline() THEN NULL; END IF; -- before the event: see follow_timeline
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, expires_at, holder, reason)
    VALUES (at_, queue_event.kind, t.account_id, t.session_id, t.run_id, t.expires_at, t.holder, why)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
END
$fn$;

-- queue_place_of computes the place of ticket id in its session's queue at now_.
CREATE OR REPLACE FUNCTION lease.queue_place_of(account_id text, session_id text, id bigint, expires_at timestamptz, now_ timestamptz)
RETURNS lease.queue_place
LANGUAGE sql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
    SELECT ROW(count(*)::integer, queue_place_of.expires_at, min(q.expires_at))::lease.queue_place
      FROM lease.queue_ticket q
     WHERE q.account_id = queue_place_of.account_id AND q.session_id = queue_place_of.session_id
       AND q.id < queue_place_of.id AND q.expires_at > now_
$fn$;

-- enqueue takes (or keeps) run_id's ticket on the session for ttl, labelled
-- holder, and returns its place. run_id is the run's secret id, as for
-- acquire; the ticket records its public id. Called again while the ticket
-- lives it renews it and writes no event; once the ticket has expired, the
-- run joins again at the tail. Returns ahead 0 and no expiry, writing
-- nothing, when the caller should just acquire: the key is free and has no
-- queue, or the caller holds the lease. A full queue raises SQLSTATE 54000.
CREATE OR REPLACE FUNCTION lease.enqueue(account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS lease.queue_place
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    cur lease.session_lease;
    held boolean;
    t lease.queue_ticket;
    live integer;
BEGIN
    IF NOT coalesce(lease.grant_ok(enqueue.account_id, enqueue.session_id, enqueue.run_id,
                                   enqueue.ttl, enqueue.holder, now_), false) THEN
        PERFORM lease.refuse_grant(enqueue.account_id, enqueue.session_id, enqueue.run_id,
                                   enqueue.ttl, enqueue.holder, now_);
    END IF;
    pub := lease.public_run_id(enqueue.run_id);

    -- A renewal of a live ticket: no lock, no event.
    UPDATE lease.queue_ticket q
       SET renewed_at = now_, expires_at = now_ + enqueue.ttl
     WHERE q.account_id = enqueue.account_id AND q.session_id = enqueue.session_id
       AND q.run_id = pub AND q.expires_at > now_
    RETURNING * INTO t;
    IF FOUND THEN
        RETURN lease.queue_place_of(t.account_id, t.session_id, t.id, t.expires_at, now_);
    END IF;

    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = enqueue.account_id AND l.session_id = enqueue.session_id;
    held := FOUND AND cur.expires_at > now_;
    IF held AND cur.run_id = pub THEN
        RETURN ROW(0, NULL, NULL)::lease.queue_place; -- the caller holds it
    END IF;

    -- Serialise this session's enqueues: the cap and the order.
    LOOP
        INSERT INTO lease.session_queue AS s VALUES (enqueue.account_id, enqueue.session_id) ON CONFLICT DO NOTHING;
        PERFORM FROM lease.session_queue s
          WHERE s.account_id = enqueue.account_id AND s.session_id = enqueue.session_id FOR UPDATE;
        EXIT WHEN FOUND;
    END LOOP;

    -- Tickets that expired end here, one queue_left each (this run's own too).
    FOR t IN
        DELETE FROM lease.queue_ticket q
         WHERE q.account_id = enqueue.account_id AND q.session_id = enqueue.session_id AND q.expires_at <= now_
        RETURNING *
    LOOP
        PERFORM lease.queue_event('queue_left', t, 'expired', now_);
    END LOOP;

    SELECT count(*) INTO live FROM lease.queue_ticket q
     WHERE q.account_id = enqueue.account_id AND q.session_id = enqueue.session_id;
    IF NOT held AND live = 0 THEN
        RETURN ROW(0, NULL, NULL)::lease.queue_place; -- free and no queue: acquire it
    END IF;
    IF live >= lease.queue_limit() THEN
        RAISE EXCEPTION 'the queue of %/% is full (% tickets)', enqueue.account_id, enqueue.session_id, live
            USING ERRCODE = '54000';
    END IF;

    INSERT INTO lease.queue_ticket AS q (account_id, session_id, run_id, holder, joined_at, renewed_at, expires_at)
    VALUES (enqueue.account_id, enqueue.session_id, pub, coalesce(enqueue.holder, ''), now_, now_, now_ + enqueue.ttl)
    RETURNING * INTO t;
    PERFORM lease.queue_event('queue_joined', t, NULL, now_);
    RETURN lease.queue_place_of(t.account_id, t.session_id, t.id, t.expires_at, now_);
END
$fn$;

-- renew_ticket extends run_id's live ticket to now + ttl and returns its
-- place, or NULL when run_id has no live ticket on the session (it expired,
-- was cancelled or was granted): it never revives one. Writes no event.
CREATE OR REPLACE FUNCTION lease.renew_ticket(account_id text, session_id text, run_id uuid, ttl interval)
RETURNS lease.queue_place
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    t lease.queue_ticket;
BEGIN
    PERFORM lease.check_key(renew_ticket.account_id, renew_ticket.session_id);
    PERFORM lease.check_ttl_span(renew_ticket.ttl, now_);
    UPDATE lease.queue_ticket q
       SET renewed_at = now_, expires_at = now_ + renew_ticket.ttl
     WHERE q.account_id = renew_ticket.account_id AND q.session_id = renew_ticket.session_id
       AND q.run_id = lease.public_run_id(renew_ticket.run_id) AND q.expires_at > now_
    RETURNING * INTO t;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN lease.queue_place_of(t.account_id, t.session_id, t.id, t.expires_at, now_);
END
$fn$;

-- cancel_ticket ends run_id's ticket on the session at once and returns true
-- (false, writing nothing, when it has none): the next waiter moves up and
-- hears the queue_left notification.
CREATE OR REPLACE FUNCTION lease.cancel_ticket(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    t lease.queue_ticket;
BEGIN
    PERFORM lease.check_key(cancel_ticket.account_id, cancel_ticket.session_id);
    DELETE FROM lease.queue_ticket q
     WHERE q.account_id = cancel_ticket.account_id AND q.session_id = cancel_ticket.session_id
       AND q.run_id = lease.public_run_id(cancel_ticket.run_id)
    RETURNING * INTO t;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM lease.queue_event('queue_left', t, CASE WHEN t.expires_at <= now_ THEN 'expired' ELSE 'cancelled' END, now_);
    RETURN true;
END
$fn$;

-- queue_admits is lease.acquire's question when the session has a live
-- ticket: may the run with public id pub take the free lease now? Only the
-- head ticket's run may. Granted to nobody.
CREATE OR REPLACE FUNCTION lease.queue_admits(account_id text, session_id text, pub uuid, now_ timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
    SELECT coalesce((SELECT q.run_id = queue_admits.pub
                       FROM lease.queue_ticket q
                      WHERE q.account_id = queue_admits.account_id AND q.session_id = queue_admits.session_id
                        AND q.expires_at > queue_admits.now_
                      ORDER BY q.id LIMIT 1), true)
$fn$;

-- queue_granted ends the ticket of the run (public id pub) that lease.acquire
-- has just granted the lease, in the grant's transaction, with a queue_left
-- event (reason 'granted'). Granted to nobody.
CREATE OR REPLACE FUNCTION lease.queue_granted(account_id text, session_id text, pub uuid, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    t lease.queue_ticket;
BEGIN
    DELETE FROM lease.queue_ticket q
     WHERE q.account_id = queue_granted.account_id AND q.session_id = queue_granted.session_id
       AND q.run_id = queue_granted.pub
    RETURNING * INTO t;
    IF FOUND THEN
        PERFORM lease.queue_event('queue_left', t, 'granted', now_);
    END IF;
END
$fn$;
