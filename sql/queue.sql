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
-- A ticket nobody renews leaves the queue by itself: it is not live once it
-- has expired, and whoever next touches the session's queue (an enqueue or
-- renew_ticket of any waiter, a grant of the lease, a cancel or a clear)
-- ends it with its queue_left event, reason expired (lease.queue_purge). The
-- library renews a ticket twice per its TTL and takes it for one renewal
-- interval of a lease, so a killed waiter's ticket leaves within about that
-- interval of its last renewal, not a lease TTL (issue 38, item 5).
--
-- One login may hold at most half of a session's queue (lease.queue_share,
-- SQLSTATE LQ001), so no single login can fill it; an operator (lease_admin)
-- clears one ticket or the whole queue with lease.clear_queue, recorded as
-- queue_left with reason 'cleared: <why>' and the operator's login as actor;
-- a cleared run's next enqueue or renew_ticket is refused (SQLSTATE LQ002),
-- so it stops waiting instead of joining again (issue 37, item 6).
--
-- The functions follow sql.go's Conventions: SECURITY DEFINER, the pinned
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

-- Version 6: the login (session_user) that took each ticket, for the
-- per-login share. Tickets of an older version show ''.
ALTER TABLE lease.queue_ticket ADD COLUMN IF NOT EXISTS login text NOT NULL DEFAULT '';

-- Version 7: the account's queue (below): whether the ticket's run waits
-- for a slot of its limited account, and the pool it asked for.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.queue_ticket'::regclass
                      AND attname = 'for_slot' AND NOT attisdropped) THEN
        ALTER TABLE lease.queue_ticket ADD COLUMN for_slot boolean NOT NULL DEFAULT false;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.queue_ticket'::regclass
                      AND attname = 'pool' AND NOT attisdropped) THEN
        ALTER TABLE lease.queue_ticket ADD COLUMN pool text NOT NULL DEFAULT '';
    END IF;
    IF to_regclass('lease.queue_ticket_slot_idx') IS NULL THEN
        CREATE INDEX queue_ticket_slot_idx ON lease.queue_ticket (account_id, pool, id) WHERE for_slot;
    END IF;
END
$$;

-- The tickets an operator cleared (lease.clear_queue), until a while after
-- they would have expired: their run's next enqueue or renew_ticket is
-- refused (SQLSTATE LQ002) instead of taking a new ticket at the tail, so a
-- cleared waiter stops. run_id is the public run id; actor the operator's
-- login. lease.queue_purge drops the rows past until.
CREATE TABLE IF NOT EXISTS lease.queue_cleared (
    account_id text        NOT NULL,
    session_id text        NOT NULL,
    run_id     uuid        NOT NULL,
    actor      text        NOT NULL,
    reason     text        NOT NULL,
    until      timestamptz NOT NULL,
    PRIMARY KEY (account_id, session_id, run_id)
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

-- queue_share is the most live tickets one login (session_user) may hold in
-- a session's queue: half of queue_limit, so that one login can never hold
-- the whole queue. A platform that runs all its processes under one login
-- queues at most this many waiters per session.
CREATE OR REPLACE FUNCTION lease.queue_share()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT 32
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
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, expires_at, holder, reason)
    VALUES (at_, queue_event.kind, t.account_id, t.session_id, t.run_id, t.expires_at, t.holder, why)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
END
$fn$;

-- queue_purge ends the session's tickets that expired by now_, each with a
-- queue_left event (reason expired), and forgets the cleared runs whose
-- refusal ran out. A ticket another transaction holds locked is skipped (it
-- is being renewed, granted or ended there), so concurrent purges of one
-- session never wait on each other nor record a ticket twice. Granted to
-- nobody; every function that touches a session's queue calls it.
CREATE OR REPLACE FUNCTION lease.queue_purge(account_id text, session_id text, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    t lease.queue_ticket;
BEGIN
    FOR t IN
        DELETE FROM lease.queue_ticket q
         WHERE (q.account_id, q.session_id, q.id) IN (
                SELECT x.account_id, x.session_id, x.id FROM lease.queue_ticket x
                 WHERE x.account_id = queue_purge.account_id AND x.session_id = queue_purge.session_id
                   AND x.expires_at <= now_
                   FOR UPDATE SKIP LOCKED)
        RETURNING *
    LOOP
        PERFORM lease.queue_event('queue_left', t, 'expired', now_);
    END LOOP;
    DELETE FROM lease.queue_cleared c
     WHERE c.account_id = queue_purge.account_id AND c.session_id = queue_purge.session_id AND c.until <= now_;
END
$fn$;

-- queue_refuse_cleared raises SQLSTATE LQ002 when an operator cleared the
-- ticket of the run with public id pub on the session (lease.clear_queue)
-- and the refusal has not run out: the run must stop waiting, not join
-- again. Granted to nobody.
CREATE OR REPLACE FUNCTION lease.queue_refuse_cleared(account_id text, session_id text, pub uuid, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    c lease.queue_cleared;
BEGIN
    SELECT * INTO c FROM lease.queue_cleared x
     WHERE x.account_id = queue_refuse_cleared.account_id AND x.session_id = queue_refuse_cleared.session_id
       AND x.run_id = pub AND x.until > now_;
    IF FOUND THEN
        RAISE EXCEPTION 'the ticket of run % in the queue of %/% was cleared by % (%): stop waiting, or queue again as a new run',
            pub, c.account_id, c.session_id, c.actor, CASE WHEN c.reason = '' THEN 'no reason given' ELSE c.reason END
            USING ERRCODE = 'LQ002';
    END IF;
END
$fn$;

-- queue_place_of computes the place of ticket id in its session's queue at
-- now_: the live tickets ahead of it in the session and, for a ticket that
-- waits for a slot, the account's tickets ahead of it that wait for one of
-- the same pool.
CREATE OR REPLACE FUNCTION lease.queue_place_of(account_id text, session_id text, id bigint, expires_at timestamptz, now_ timestamptz)
RETURNS lease.queue_place
LANGUAGE sql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
    SELECT ROW(count(*)::integer, queue_place_of.expires_at, min(x.expires_at))::lease.queue_place
      FROM (SELECT q.expires_at FROM lease.queue_ticket q
             WHERE q.account_id = queue_place_of.account_id AND q.session_id = queue_place_of.session_id
               AND q.id < queue_place_of.id AND q.expires_at > now_
            UNION ALL
            SELECT q.expires_at FROM lease.queue_ticket me
              JOIN lease.queue_ticket q ON q.account_id = me.account_id AND q.pool = me.pool AND q.for_slot
               AND q.session_id <> me.session_id AND q.id < me.id AND q.expires_at > now_
             WHERE me.account_id = queue_place_of.account_id AND me.session_id = queue_place_of.session_id
               AND me.id = queue_place_of.id AND me.for_slot) x
$fn$;

-- enqueue takes (or keeps) run_id's ticket on the session for ttl, labelled
-- holder, and returns its place. run_id is the run's secret id, as for
-- acquire; the ticket records its public id. Called again while the ticket
-- lives it renews it and writes no event; once the ticket has expired, the
-- run joins again at the tail. Returns ahead 0 and no expiry, writing
-- nothing, when the caller should just acquire: the key is free and has no
-- queue, or the caller holds the lease. A full queue raises SQLSTATE 54000,
-- a login holding its share of it (queue_share) LQ001, a run whose ticket an
-- operator cleared LQ002; each writes nothing.
CREATE OR REPLACE FUNCTION lease.enqueue(account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS lease.queue_place
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    cur lease.session_lease;
    held boolean;
    t lease.queue_ticket;
    live integer;
    mine integer;
BEGIN
    IF NOT coalesce(lease.grant_ok(enqueue.account_id, enqueue.session_id, enqueue.run_id,
                                   enqueue.ttl, enqueue.holder, now_), false) THEN
        PERFORM lease.refuse_grant(enqueue.account_id, enqueue.session_id, enqueue.run_id,
                                   enqueue.ttl, enqueue.holder, now_);
    END IF;
    pub := lease.public_run_id(enqueue.run_id);

    -- A renewal of a live ticket: no session lock, and no event but the
    -- queue_left of the tickets it finds expired.
    UPDATE lease.queue_ticket q
       SET renewed_at = now_, expires_at = now_ + enqueue.ttl
     WHERE q.account_id = enqueue.account_id AND q.session_id = enqueue.session_id
       AND q.run_id = pub AND q.expires_at > now_
    RETURNING * INTO t;
    IF FOUND THEN
        PERFORM lease.queue_purge(enqueue.account_id, enqueue.session_id, now_);
        IF t.for_slot THEN
            PERFORM lease.account_queue_purge(enqueue.account_id, now_); -- dead waiters of the account's queue
        END IF;
        RETURN lease.queue_place_of(t.account_id, t.session_id, t.id, t.expires_at, now_);
    END IF;
    PERFORM lease.queue_refuse_cleared(enqueue.account_id, enqueue.session_id, pub, now_);

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
    PERFORM lease.queue_purge(enqueue.account_id, enqueue.session_id, now_);

    SELECT count(*), count(*) FILTER (WHERE q.login = session_user) INTO live, mine FROM lease.queue_ticket q
     WHERE q.account_id = enqueue.account_id AND q.session_id = enqueue.session_id;
    -- A free session of an account whose slots are all held, or have runs
    -- waiting for them, queues all the same: in the account's queue.
    IF NOT lease.account_busy(enqueue.account_id, now_) AND NOT held AND live = 0 THEN
        RETURN ROW(0, NULL, NULL)::lease.queue_place; -- free and no queue: acquire it
    END IF;
    IF live >= lease.queue_limit() THEN
        RAISE EXCEPTION 'the queue of %/% is full (% tickets)', enqueue.account_id, enqueue.session_id, live
            USING ERRCODE = '54000';
    END IF;
    IF mine >= lease.queue_share() THEN
        RAISE EXCEPTION 'login % holds % of the % tickets of the queue of %/%, the most one login may hold',
            session_user, mine, lease.queue_limit(), enqueue.account_id, enqueue.session_id
            USING ERRCODE = 'LQ001';
    END IF;

    INSERT INTO lease.queue_ticket AS q (account_id, session_id, run_id, holder, login, joined_at, renewed_at, expires_at)
    VALUES (enqueue.account_id, enqueue.session_id, pub, coalesce(enqueue.holder, ''), session_user, now_, now_, now_ + enqueue.ttl)
    RETURNING * INTO t;
    PERFORM lease.queue_event('queue_joined', t, NULL, now_);
    RETURN lease.queue_place_of(t.account_id, t.session_id, t.id, t.expires_at, now_);
END
$fn$;

-- renew_ticket extends run_id's live ticket to now + ttl and returns its
-- place, or NULL when run_id has no live ticket on the session (it expired,
-- was cancelled or was granted): it never revives one. A ticket an operator
-- cleared raises SQLSTATE LQ002 instead. Writes no event but the queue_left
-- of the tickets it finds expired.
CREATE OR REPLACE FUNCTION lease.renew_ticket(account_id text, session_id text, run_id uuid, ttl interval)
RETURNS lease.queue_place
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
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
        PERFORM lease.queue_refuse_cleared(renew_ticket.account_id, renew_ticket.session_id,
                                           lease.public_run_id(renew_ticket.run_id), now_);
        RETURN NULL;
    END IF;
    PERFORM lease.queue_purge(renew_ticket.account_id, renew_ticket.session_id, now_);
    IF t.for_slot THEN
        PERFORM lease.account_queue_purge(renew_ticket.account_id, now_); -- dead waiters of the account's queue
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
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
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
    PERFORM lease.queue_purge(cancel_ticket.account_id, cancel_ticket.session_id, now_);
    RETURN true;
END
$fn$;

-- clear_queue is the operator's end of tickets: it ends the live ticket of
-- run_id on the session (the *public* run id, as the queue shows it; NULL:
-- every live ticket), records each in a queue_left event with reason
-- 'cleared: ' || reason ('cleared' without one) and the login
-- (session_user) as actor, notifies, and returns how many it ended. The
-- session's expired tickets end as expired first. A cleared run's next
-- enqueue or renew_ticket is refused (SQLSTATE LQ002) until a ticket TTL
-- after its ticket would have expired: it stops waiting rather than join
-- again at the tail. Serialised with the session's enqueues, so a clear of
-- the whole queue ends every ticket taken before it. Granted to lease_admin.
CREATE OR REPLACE FUNCTION lease.clear_queue(account_id text, session_id text, run_id uuid, reason text)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    why text := 'cleared';
    t lease.queue_ticket;
    n integer := 0;
BEGIN
    PERFORM lease.check_key(clear_queue.account_id, clear_queue.session_id);
    PERFORM lease.check_label('reason', clear_queue.reason, 512);
    IF coalesce(clear_queue.reason, '') <> '' THEN
        why := 'cleared: ' || clear_queue.reason;
    END IF;
    PERFORM FROM lease.session_queue s
      WHERE s.account_id = clear_queue.account_id AND s.session_id = clear_queue.session_id FOR UPDATE;
    PERFORM lease.queue_purge(clear_queue.account_id, clear_queue.session_id, now_);
    FOR t IN
        DELETE FROM lease.queue_ticket q
         WHERE q.account_id = clear_queue.account_id AND q.session_id = clear_queue.session_id
           AND (clear_queue.run_id IS NULL OR q.run_id = clear_queue.run_id)
        RETURNING *
    LOOP
        INSERT INTO lease.queue_cleared AS c (account_id, session_id, run_id, actor, reason, until)
        VALUES (t.account_id, t.session_id, t.run_id, session_user, coalesce(clear_queue.reason, ''),
                t.expires_at + (t.expires_at - t.renewed_at))
        ON CONFLICT (account_id, session_id, run_id) DO UPDATE
            SET actor = EXCLUDED.actor, reason = EXCLUDED.reason, until = EXCLUDED.until;
        PERFORM lease.queue_event('queue_left', t, why, now_);
        n := n + 1;
    END LOOP;
    RETURN n;
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
-- event (reason 'granted'), and the session's expired tickets (queue_purge).
-- lease.acquire calls it when the session has any ticket. Granted to nobody.
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
        IF t.for_slot THEN
            PERFORM lease.account_queue_purge(queue_granted.account_id, now_); -- dead waiters of the account's queue
        END IF;
    END IF;
    PERFORM lease.queue_purge(queue_granted.account_id, queue_granted.session_id, now_);
END
$fn$;

-- The account's queue (version 7): the next freed slot of a limited account
-- goes to its oldest waiting run (limits.sql). It is no second mechanism:
-- a run that is refused a grant because its account or pool is at its
-- limit, and holds a ticket of its session (lease.enqueue gives it one while
-- its account is busy, even for a free session), has that ticket marked as
-- waiting for a slot of the pool it asked for (lease.slot_wait). The
-- tickets waiting for a slot of one account and pool are ordered by id, as
-- a session's are; while some are live, lease.acquire grants the
-- account's k free slots only to runs with fewer than k of them ahead
-- (lease.slot_gate_admits): a newer acquire cannot jump ahead, and a
-- dead waiter's ticket expires like any other and stops holding the others
-- up; it leaves with its queue_left event (reason expired) at the next
-- renewal, grant or new ticket of any waiter of the account
-- (account_queue_purge), whichever session it is in. Runs of different
-- pools do not wait for one another. lease.preempt does not queue: a
-- preempt is the privileged way past the queue. An account without a limit
-- pays nothing; a limited one with no waiter one probe of an empty range of
-- queue_ticket_slot_idx. At most account_queue_limit() live tickets of an
-- account wait for a slot (SQLSTATE 54000).

-- account_queue_limit is the cap on an account's live tickets that wait for
-- a slot.
CREATE OR REPLACE FUNCTION lease.account_queue_limit()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT 10000
$fn$;

-- free_slots is how many more runs in pool account_id may be granted at
-- now_: the fewest free slots among the limits that apply (the account's ''
-- and pool's), NULL when none applies. A slot is held while the lease of
-- the session it names is unexpired (and in its pool), as take_slots reads it.
CREATE OR REPLACE FUNCTION lease.free_slots(account_id text, pool text, now_ timestamptz)
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
    SELECT min(a.slots - (SELECT count(*)::integer FROM lease.limit_slot t
                           WHERE t.account_id = a.account_id AND t.pool = a.pool
                             AND EXISTS (SELECT FROM lease.session_lease l
                                          WHERE l.account_id = t.account_id AND l.session_id = t.session_id
                                            AND l.expires_at > free_slots.now_
                                            AND (t.pool = '' OR l.pool = t.pool))))
      FROM lease.account_limit a
     WHERE a.account_id = free_slots.account_id AND a.pool IN ('', free_slots.pool)
$fn$;

-- slot_gate_admits is lease.acquire's question when its account has live
-- tickets waiting for a slot of pool: may the run with public id pub, on
-- the session, be granted a slot now? Only when fewer tickets wait ahead of
-- it (older than its own live ticket of the session; every one, when it has
-- none) than there are free slots. Granted to nobody.
CREATE OR REPLACE FUNCTION lease.slot_gate_admits(account_id text, session_id text, pub uuid, pool text,
                                                  now_ timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    mine bigint;
    free integer;
    ahead integer;
BEGIN
    SELECT q.id INTO mine FROM lease.queue_ticket q
     WHERE q.account_id = slot_gate_admits.account_id AND q.session_id = slot_gate_admits.session_id
       AND q.run_id = pub AND q.expires_at > now_;
    free := coalesce(lease.free_slots(slot_gate_admits.account_id, slot_gate_admits.pool, now_), 0);
    IF free <= 0 THEN
        RETURN false;
    END IF;
    SELECT count(*) INTO ahead FROM (
        SELECT FROM lease.queue_ticket q
         WHERE q.account_id = slot_gate_admits.account_id AND q.pool = slot_gate_admits.pool AND q.for_slot
           AND q.id < coalesce(mine, 9223372036854775807) AND q.expires_at > now_
           AND q.run_id <> pub
         LIMIT free) w;
    RETURN ahead < free;
END
$fn$;

-- slot_wait marks the live ticket of the run with public id pub on the
-- session, if it has one, as waiting for a slot of pool: its run was just
-- refused a grant because its account or pool is at its limit (or older
-- tickets wait for the free slots). From then on it holds its place in the
-- account's queue (slot_gate_admits). Granted to nobody.
CREATE OR REPLACE FUNCTION lease.slot_wait(account_id text, session_id text, pub uuid, pool text, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    UPDATE lease.queue_ticket q SET for_slot = true, pool = coalesce(slot_wait.pool, '')
     WHERE q.account_id = slot_wait.account_id AND q.session_id = slot_wait.session_id
       AND q.run_id = pub AND q.expires_at > now_
       AND (NOT q.for_slot OR q.pool <> coalesce(slot_wait.pool, ''));
END
$fn$;

-- account_queue_purge ends up to 64 of account_id's tickets that waited for
-- a slot and expired by now_, each with a queue_left event (reason expired),
-- whichever session they are in: a dead waiter's ticket in a session nobody
-- touches goes too. Locked tickets are skipped, as in queue_purge. Granted
-- to nobody.
CREATE OR REPLACE FUNCTION lease.account_queue_purge(account_id text, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    t lease.queue_ticket;
BEGIN
    FOR t IN
        DELETE FROM lease.queue_ticket q
         WHERE (q.account_id, q.session_id, q.id) IN (
                SELECT x.account_id, x.session_id, x.id FROM lease.queue_ticket x
                 WHERE x.account_id = account_queue_purge.account_id AND x.for_slot AND x.expires_at <= now_
                 LIMIT 64
                   FOR UPDATE SKIP LOCKED)
        RETURNING *
    LOOP
        PERFORM lease.queue_event('queue_left', t, 'expired', now_);
    END LOOP;
END
$fn$;

-- account_busy reports whether a run of account_id that finds its session
-- free should queue rather than acquire at once (lease.enqueue): the
-- account has a limit and some of its tickets wait for a slot, or one of
-- its limits has no free slot. It does not know the run's pool, so it may
-- answer yes for a run whose limits have room: that run takes a ticket and
-- is granted at once. First it ends up to 64 expired waiters
-- (account_queue_purge), and it refuses a new waiter beyond
-- account_queue_limit (SQLSTATE 54000). Granted to nobody.
CREATE OR REPLACE FUNCTION lease.account_busy(account_id text, now_ timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    waiting integer;
BEGIN
    IF NOT EXISTS (SELECT FROM lease.account_limit a WHERE a.account_id = account_busy.account_id) THEN
        RETURN false;
    END IF;
    PERFORM lease.account_queue_purge(account_busy.account_id, now_);
    SELECT count(*) INTO waiting FROM (
        SELECT FROM lease.queue_ticket q
         WHERE q.account_id = account_busy.account_id AND q.for_slot AND q.expires_at > now_
         LIMIT lease.account_queue_limit()) w;
    IF waiting >= lease.account_queue_limit() THEN
        RAISE EXCEPTION 'the queue of account % is full (% runs wait for a slot)', account_busy.account_id, waiting
            USING ERRCODE = '54000';
    END IF;
    RETURN waiting > 0 OR EXISTS (
        SELECT FROM lease.account_limit a
         WHERE a.account_id = account_busy.account_id
           AND lease.free_slots(a.account_id, a.pool, now_) <= 0);
END
$fn$;
