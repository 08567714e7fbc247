-- leasetop inbox: messages to a conversation, delivered to whichever run
-- holds it (issue 41). Applied after handover.sql, as the schema's owner.
--
-- A device sends a message to a conversation, not to a run
-- (lease.send_message): kind steer ("also check the March invoices") or
-- cancel ("stop"), a body of one line, the sender's label and an
-- idempotency key. The run holding the conversation receives the messages
-- in order (lease.receive_messages, with its secret run id, while it holds
-- the unexpired lease) and acknowledges each under its fence
-- (lease.ack_message, with the lease row locked as lease.check_fence locks
-- it). A message delivered to a run that ended without acknowledging it
-- (released, crashed, expired, taken over, preempted, handed over) is
-- delivered again to the next holder, which the history records as
-- message_carried (from run X to run Y). A sender sees where its message is
-- (lease.message_state): waiting, delivered to run X at fence F, acked by
-- run X at fence F, or expired.
--
-- Order and exactly once per run. The sends of one conversation are
-- serialised on its lease.inbox row, so a conversation's message ids rise
-- in the order the messages committed: a receiver that has read up to id N
-- (after_id) never misses a later commit below it. A receive returns the
-- unacknowledged, unexpired messages after after_id, marking each delivered
-- to the caller's (public run id, fence); the same call again returns the
-- same messages and writes nothing (a lost reply loses nothing), and the
-- library hands each id to its program once per run.
--
-- Bounded like every write a caller can make: at most 64 live (unacked,
-- unexpired) messages per conversation (SQLSTATE LM002), at most 32 of them
-- sent by one login (session_user, which a caller cannot choose; a label
-- can be anything) and at most 1000 live messages per login across every
-- conversation (LM003); a body of at most 4096 bytes of one line, a key of
-- at most 128 bytes, a label of at most 256 (lease.safe_text: no control,
-- bidirectional or invisible characters, so a newline too is refused: one
-- message is one line for the shell scripts that read them); a TTL of more
-- than 0 and at most 24 hours. A resend with the same key and the same kind
-- and body is the same message (answered, nothing written); another body
-- under the same key is refused (LM001). A caller that does not hold the
-- lease may neither receive nor acknowledge (LM004).
--
-- Expiry. A message not acknowledged by its expires_at is expired: no
-- receive returns it and no ack takes it. Its message_expired event is
-- written lazily and bounded: by the next send or receive of its
-- conversation (16 at most each), by an ack that finds it, and by
-- lease.maintain_messages (leasetop maintain), which also deletes the
-- messages that ended more than its keep ago.
--
-- Every transition is one event in lease.event (message_id names the
-- message; run_id and fence the run it went to, prev_run_id and prev_fence
-- the run it was carried from; holder the sender's label, reason the
-- message's kind), notified on lease_events in the writing transaction:
-- message_sent (run_id the holder when it was sent, NULL when none),
-- message_delivered, message_carried, message_acked, message_expired (run_id
-- the run it was last delivered to, if any). None of them moves a lease.
--
-- Who reads what (roles.sql): lease_app sends (to any conversation: the
-- library's Permit decides, as for acquire), and only the holder receives
-- and acknowledges; lease_reader reads every column of lease.message but
-- the body and the key (column privileges: who sent what when, and where
-- it is); lease_admin reads the bodies too, as operators who act on
-- sessions need to see what a stuck message asks, and keeps the inbox
-- (maintain_messages).

-- The message of an event (NULL for every other kind of event). Added where
-- missing, after the columns the other files add, so the column order is the
-- same in a new database and an upgraded one.
ALTER TABLE lease.event ADD COLUMN IF NOT EXISTS message_id bigint;

-- The texts of a message, as domains (checked where a value becomes the
-- domain's: a send's INSERT; the UPDATEs that deliver and acknowledge check
-- nothing): its kind, its body (one line of at most 4096 bytes) and its
-- idempotency key (1 to 128 bytes), the last two refusing what
-- lease.safe_text refuses, spelled out as schema.sql's domains spell it (a
-- domain's check runs with the privileges of whoever casts to it, and no
-- client role may call lease.safe_text). A constraint that calls
-- safe_text, as the first builds of this file made, is replaced.
DO $$
DECLARE
    refused constant text := '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]';
    -- each domain and its rule; its constraint is named <domain>_check
    domains constant text[][] := ARRAY[
        ['message_text', 'octet_length(VALUE) <= 4096'],
        ['message_key', 'octet_length(VALUE) BETWEEN 1 AND 128']];
    d text[];
BEGIN
    IF to_regtype('lease.message_kind') IS NULL THEN
        CREATE DOMAIN lease.message_kind AS text
            CONSTRAINT message_kind_check CHECK (VALUE IN ('steer', 'cancel'));
    END IF;
    IF to_regtype('lease.message_text') IS NULL THEN
        CREATE DOMAIN lease.message_text AS text;
    END IF;
    IF to_regtype('lease.message_key') IS NULL THEN
        CREATE DOMAIN lease.message_key AS text;
    END IF;
    FOREACH d SLICE 1 IN ARRAY domains LOOP
        IF NOT EXISTS (SELECT FROM pg_constraint k
                        WHERE k.contypid = format('lease.%I', d[1])::regtype AND k.conname = d[1] || '_check'
                          AND strpos(pg_get_constraintdef(k.oid), refused) > 0) THEN
            EXECUTE format('ALTER DOMAIN lease.%I DROP CONSTRAINT IF EXISTS %I', d[1], d[1] || '_check');
            EXECUTE format('ALTER DOMAIN lease.%I ADD CONSTRAINT %I CHECK (%s AND VALUE !~ %L)',
                           d[1], d[1] || '_check', d[2], refused);
        END IF;
    END LOOP;
END
$$;

-- One row per message. id orders a conversation's messages: its sends are
-- serialised on lease.inbox, so ids rise in commit order per conversation.
-- delivered_* name the run it was last delivered to (public run id and the
-- fence it held), acked_* the run that acknowledged it; expired_at is set
-- when its message_expired event was written.
CREATE TABLE IF NOT EXISTS lease.message (
    account_id      lease.id_text      NOT NULL,
    session_id      lease.id_text      NOT NULL,
    id              bigint             GENERATED ALWAYS AS IDENTITY,
    kind            lease.message_kind NOT NULL,
    body            lease.message_text NOT NULL,
    sender          lease.holder_text  NOT NULL,
    actor           text               NOT NULL, -- the sender's login (session_user)
    idem_key        lease.message_key  NOT NULL,
    sent_at         timestamptz        NOT NULL,
    expires_at      timestamptz        NOT NULL,
    delivered_run   uuid,
    delivered_fence bigint,
    delivered_at    timestamptz,
    acked_run       uuid,
    acked_fence     bigint,
    acked_at        timestamptz,
    expired_at      timestamptz,
    PRIMARY KEY (account_id, session_id, id),
    CONSTRAINT message_idem_key_key UNIQUE (account_id, session_id, idem_key)
);

-- The live messages: what a receive reads and the bounds count, whatever
-- the conversation's history of acknowledged ones.
CREATE INDEX IF NOT EXISTS message_live_idx ON lease.message (account_id, session_id, id)
    WHERE acked_at IS NULL AND expired_at IS NULL;
-- The live messages by expiry (maintain_messages) and by login (the
-- per-login bound).
CREATE INDEX IF NOT EXISTS message_due_idx ON lease.message (expires_at)
    WHERE acked_at IS NULL AND expired_at IS NULL;
CREATE INDEX IF NOT EXISTS message_actor_idx ON lease.message (actor)
    WHERE acked_at IS NULL AND expired_at IS NULL;

-- One row per conversation that has had a message: the lock that
-- serialises its sends (the order and the bounds). Holds no data;
-- maintain_messages deletes the rows of conversations without messages.
CREATE TABLE IF NOT EXISTS lease.inbox (
    account_id lease.id_text NOT NULL,
    session_id lease.id_text NOT NULL,
    PRIMARY KEY (account_id, session_id)
);

-- Where a message is, as send_message and message_state answer: state is
-- waiting (never delivered), delivered (to run_id at fence), acked (by
-- run_id at fence) or expired (run_id and fence: the run it was last
-- delivered to, if any); created says this call wrote it (send_message).
DO $$
BEGIN
    IF to_regtype('lease.message_status') IS NULL THEN
        CREATE TYPE lease.message_status AS (
            id           bigint,
            kind         text,
            state        text,
            run_id       uuid,
            fence        bigint,
            sent_at      timestamptz,
            expires_at   timestamptz,
            delivered_at timestamptz,
            acked_at     timestamptz,
            created      boolean);
    END IF;
    -- What receive_messages returns for each message: carried_from is the
    -- run it had been delivered to before (NULL on a first delivery, and
    -- when this run had received it already).
    IF to_regtype('lease.received_message') IS NULL THEN
        CREATE TYPE lease.received_message AS (
            id           bigint,
            kind         text,
            body         text,
            sender       text,
            actor        text,
            sent_at      timestamptz,
            expires_at   timestamptz,
            carried_from uuid);
    END IF;
END
$$;

-- message_limit is the cap on a conversation's live messages,
-- message_share the most of them one login may have sent (half of it, so no
-- login can fill an inbox), and message_login_limit the most live messages
-- one login may have across every conversation.
CREATE OR REPLACE FUNCTION lease.message_limit()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT 64
$fn$;

CREATE OR REPLACE FUNCTION lease.message_share()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT 32
$fn$;

CREATE OR REPLACE FUNCTION lease.message_login_limit()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT 1000
$fn$;

-- message_event appends one message event naming message m: run_id and
-- fence the run it went to, prev_run_id and prev_fence the run it came from
-- (message_carried), holder the sender's label, reason the message's kind,
-- expires_at its expiry; the actor is the login of the call (session_user).
-- It notifies lease_events with the row, in the commit, unless pending_for
-- is not NULL and the caller opted its transaction out of the commit's
-- NOTIFY (lease.caller_notifies, as for the trigger: see triggers.sql):
-- then the payload is kept in the session for the caller's notification
-- after its commit (lease.pending_event, lease.pending_for = pending_for:
-- a lease.pending_key), as the trigger keeps an acquire's. The library
-- sends a send's and an acknowledgement's that way: a transaction that
-- notifies holds the cluster's notify lock through its WAL flush, so
-- notifying commits go one at a time. Its callers call it in an expression
-- (IF lease.message_event(...) IS NULL THEN NULL; END IF), not with
-- PERFORM, which sets up the executor for a query around the call (as
-- follow_failover's callers do); it calls set_config and pg_notify the
-- same way. Granted to nobody.
CREATE OR REPLACE FUNCTION lease.message_event(kind text, m lease.message, run uuid, fence bigint,
                                               prev_run uuid, prev_fence bigint, at_ timestamptz,
                                               pending_for text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
    kept text;
BEGIN
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence,
                             expires_at, holder, reason, message_id)
    VALUES (at_, message_event.kind, m.account_id, m.session_id, message_event.run, message_event.prev_run,
            message_event.fence, message_event.prev_fence, m.expires_at, m.sender, m.kind, m.id)
    RETURNING * INTO ev;
    IF message_event.pending_for IS NOT NULL
       AND current_setting('lease.caller_notifies', true) IS NOT DISTINCT FROM extract(epoch FROM now())::text THEN
        kept := set_config('lease.pending_event', row_to_json(ev)::text, false);
        kept := set_config('lease.pending_for', message_event.pending_for, false);
        RETURN;
    END IF;
    IF pg_notify('lease_events', lease.event_json(ev)) IS NULL THEN NULL; END IF; -- an expression: see below
END
$fn$;

-- message_status_of is where message m is at now_ (see lease.message_status).
-- PL/pgSQL, not SQL: a SQL function with its own search_path is planned
-- again on every call (see lease.event_json).
CREATE OR REPLACE FUNCTION lease.message_status_of(m lease.message, now_ timestamptz, created boolean)
RETURNS lease.message_status
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    RETURN ROW(m.id, m.kind::text,
               CASE WHEN m.acked_at IS NOT NULL THEN 'acked'
                    WHEN m.expired_at IS NOT NULL OR m.expires_at <= now_ THEN 'expired'
                    WHEN m.delivered_run IS NOT NULL THEN 'delivered'
                    ELSE 'waiting' END,
               coalesce(m.acked_run, m.delivered_run), coalesce(m.acked_fence, m.delivered_fence),
               m.sent_at, m.expires_at, m.delivered_at, m.acked_at, created)::lease.message_status;
END
$fn$;

-- message_expire ends, each with its message_expired event, at most max_count
-- messages past their expiry that nobody acknowledged: the conversation's
-- (account_id and session_id NULL: any conversation's, oldest expiry
-- first). A message another transaction holds locked (being delivered or
-- acknowledged) is skipped. Returns how many it ended. Granted to nobody.
CREATE OR REPLACE FUNCTION lease.message_expire(account_id text, session_id text, now_ timestamptz, max_count integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    m lease.message;
    n integer := 0;
BEGIN
    FOR m IN
        UPDATE lease.message x SET expired_at = now_
         WHERE (x.account_id, x.session_id, x.id) IN (
                SELECT d.account_id, d.session_id, d.id FROM lease.message d
                 WHERE (message_expire.account_id IS NULL
                        OR (d.account_id = message_expire.account_id AND d.session_id = message_expire.session_id))
                   AND d.acked_at IS NULL AND d.expired_at IS NULL AND d.expires_at <= now_
                 ORDER BY d.expires_at
                 LIMIT max_count
                   FOR UPDATE SKIP LOCKED)
        RETURNING *
    LOOP
        IF lease.message_event('message_expired', m, m.delivered_run, m.delivered_fence, NULL, NULL, now_) IS NULL THEN
            NULL; -- an expression, not PERFORM: see message_event
        END IF;
        n := n + 1;
    END LOOP;
    RETURN n;
END
$fn$;

-- message_resend answers a send whose key names message m already: the same
-- kind and body is the same message (its status, created false, nothing
-- written); anything else raises SQLSTATE LM001. Granted to nobody.
CREATE OR REPLACE FUNCTION lease.message_resend(m lease.message, kind text, body text, now_ timestamptz)
RETURNS lease.message_status
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF m.kind::text IS DISTINCT FROM message_resend.kind OR m.body::text IS DISTINCT FROM message_resend.body THEN
        RAISE EXCEPTION 'idempotency key % of %/% names message % already, with another kind or body: use a new key for a new message',
            m.idem_key, m.account_id, m.session_id, m.id
            USING ERRCODE = 'LM001';
    END IF;
    RETURN lease.message_status_of(m, now_, false);
END
$fn$;

-- send_message sends a message to the conversation (account_id,
-- session_id): kind 'steer' or 'cancel', body (one line, at most 4096
-- bytes; a steer's must not be empty), the sender's label (at most 256
-- bytes), an idempotency key (1 to 128 bytes) and a ttl (more than 0, at
-- most 24 hours on the database clock). It returns the message's status:
-- created true for a new message (event message_sent, NOTIFY), false for a
-- resend of the same key, kind and body (nothing written). Another kind or
-- body under that key raises SQLSTATE LM001, a full inbox (64 live
-- messages) LM002, a login's full share of it (32) or of every inbox (1000
-- live messages) LM003; each writes nothing. Bad arguments: 22023.
CREATE OR REPLACE FUNCTION lease.send_message(account_id text, session_id text, kind text, body text,
                                              sender text, idem_key text, ttl interval)
RETURNS lease.message_status
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    me text := session_user; -- read once, not once per message counted
    m lease.message;
    resend_id bigint;
    live integer;
    mine integer;
    due boolean;
    total integer;
    holder_run uuid;
    holder_fence bigint;
BEGIN
    -- Valid input passes one expression (key_ok, ttl_ok and safe_text,
    -- inlined: each call of a check_* function, with its own search_path,
    -- is set up again in every transaction); only invalid input calls the
    -- checks, for the precise error.
    IF NOT coalesce(lease.key_ok(send_message.account_id, send_message.session_id)
                    AND lease.ttl_ok(send_message.ttl, now_)
                    AND send_message.kind IN ('steer', 'cancel')
                    AND (send_message.kind = 'cancel' OR send_message.body <> '')
                    AND octet_length(send_message.body) <= 4096
                    AND coalesce(octet_length(send_message.sender), 0) <= 256
                    AND octet_length(send_message.idem_key) BETWEEN 1 AND 128
                    AND lease.safe_text(send_message.body || coalesce(send_message.sender, '') || send_message.idem_key),
                    false) THEN
        PERFORM lease.check_key(send_message.account_id, send_message.session_id);
        IF send_message.kind IS NULL OR send_message.kind NOT IN ('steer', 'cancel') THEN
            RAISE EXCEPTION 'kind must be steer or cancel, got %', coalesce(quote_literal(send_message.kind), 'NULL')
                USING ERRCODE = '22023';
        END IF;
        IF send_message.body IS NULL OR (send_message.kind = 'steer' AND send_message.body = '') THEN
            RAISE EXCEPTION 'a % needs a body', send_message.kind USING ERRCODE = '22023';
        END IF;
        PERFORM lease.check_label('body', send_message.body, 4096);
        PERFORM lease.check_label('sender', send_message.sender, 256);
        IF coalesce(octet_length(send_message.idem_key), 0) NOT BETWEEN 1 AND 128 THEN
            RAISE EXCEPTION 'idem_key must be 1 to 128 bytes' USING ERRCODE = '22023';
        END IF;
        PERFORM lease.check_label('idem_key', send_message.idem_key, 128);
        PERFORM lease.check_ttl_span(send_message.ttl, now_);
        RAISE EXCEPTION 'invalid arguments' USING ERRCODE = '22023'; -- the expression and the checks disagree: refuse anyway
    END IF;

    -- Serialise this conversation's sends: the order and the bounds. The
    -- lock first; its row is inserted by the conversation's first send only
    -- (and again after maintain_messages deleted it).
    LOOP
        PERFORM FROM lease.inbox i
          WHERE i.account_id = send_message.account_id AND i.session_id = send_message.session_id FOR UPDATE;
        EXIT WHEN FOUND;
        INSERT INTO lease.inbox AS i VALUES (send_message.account_id, send_message.session_id) ON CONFLICT DO NOTHING;
    END LOOP;

    -- Under the lock, in one statement (a snapshot taken after the lock was
    -- ours: every send of the conversation before this one is in it): a
    -- message under this key already (a resend: answered, nothing written),
    -- the conversation's live messages (all of them, the login's, and
    -- whether one passed its expiry unmarked), the login's live messages in
    -- every inbox (counted up to its bound) and the holder.
    SELECT r.id, c.live, c.mine, c.due,
           (SELECT count(*) FROM (
                SELECT FROM lease.message y
                 WHERE y.actor = me AND y.acked_at IS NULL AND y.expired_at IS NULL AND y.expires_at > now_
                 LIMIT lease.message_login_limit()) t),
           l.run_id, l.fence
      INTO resend_id, live, mine, due, total, holder_run, holder_fence
      FROM (SELECT count(*) FILTER (WHERE x.expires_at > now_) AS live,
                   count(*) FILTER (WHERE x.expires_at > now_ AND x.actor = me) AS mine,
                   coalesce(bool_or(x.expires_at <= now_), false) AS due
              FROM lease.message x
             WHERE x.account_id = send_message.account_id AND x.session_id = send_message.session_id
               AND x.acked_at IS NULL AND x.expired_at IS NULL) c
      LEFT JOIN lease.message r
        ON r.account_id = send_message.account_id AND r.session_id = send_message.session_id
       AND r.idem_key = send_message.idem_key
      LEFT JOIN lease.session_lease l
        ON l.account_id = send_message.account_id AND l.session_id = send_message.session_id
       AND l.expires_at > now_;
    IF resend_id IS NOT NULL THEN
        SELECT * INTO m FROM lease.message x
         WHERE x.account_id = send_message.account_id AND x.session_id = send_message.session_id
           AND x.id = resend_id;
        RETURN lease.message_resend(m, send_message.kind, send_message.body, now_);
    END IF;
    IF due THEN -- their message_expired events; the counts left them out already
        PERFORM lease.message_expire(send_message.account_id, send_message.session_id, now_, 16);
    END IF;
    IF live >= lease.message_limit() THEN
        RAISE EXCEPTION 'the inbox of %/% is full (% messages waiting or unacknowledged)',
            send_message.account_id, send_message.session_id, live
            USING ERRCODE = 'LM002';
    END IF;
    IF mine >= lease.message_share() THEN
        RAISE EXCEPTION 'login % has sent % of the live messages of %/%, the most one login may',
            me, mine, send_message.account_id, send_message.session_id
            USING ERRCODE = 'LM003';
    END IF;
    IF total >= lease.message_login_limit() THEN
        RAISE EXCEPTION 'login % has % live messages in the inboxes, the most one login may', me, total
            USING ERRCODE = 'LM003';
    END IF;

    INSERT INTO lease.message AS x (account_id, session_id, kind, body, sender, actor, idem_key, sent_at, expires_at)
    VALUES (send_message.account_id, send_message.session_id, send_message.kind, send_message.body,
            coalesce(send_message.sender, ''), me, send_message.idem_key, now_, now_ + send_message.ttl)
    RETURNING * INTO m;
    -- The caller's notification after its commit, if it opted out, names
    -- no run (the sender has none): the nil run id.
    IF lease.message_event('message_sent', m, holder_run, holder_fence, NULL, NULL, now_,
                           lease.pending_key(m.account_id, m.session_id, '00000000-0000-0000-0000-000000000000'))
       IS NULL THEN
        NULL; -- an expression, not PERFORM: see message_event
    END IF;
    RETURN lease.message_status_of(m, now_, true);
END
$fn$;

-- receive_messages returns the conversation's messages with id > after_id
-- that nobody acknowledged and that have not expired, in id order, at most
-- max_count (1 to 64), to run_id (the caller's secret id) while it holds the
-- conversation's unexpired lease; SQLSTATE LM004 otherwise, nothing
-- returned or written. Each is marked delivered to the caller's public run
-- id and fence: a message delivered before to no run is recorded as
-- message_delivered, one delivered to another run (or to this run under
-- another fence) that ended without acknowledging it as message_carried
-- (carried_from names that run), and one this run received already writes
-- nothing. So the same call again returns the same messages: a lost reply
-- loses nothing.
CREATE OR REPLACE FUNCTION lease.receive_messages(account_id text, session_id text, run_id uuid, after_id bigint,
                                                  max_count integer DEFAULT 64)
RETURNS SETOF lease.received_message
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
    m lease.message;
    prev uuid;
    due boolean;
BEGIN
    IF NOT coalesce(lease.key_ok(receive_messages.account_id, receive_messages.session_id), false) THEN
        PERFORM lease.check_key(receive_messages.account_id, receive_messages.session_id); -- raises the precise error
    END IF;
    IF receive_messages.run_id IS NULL OR receive_messages.run_id = '00000000-0000-0000-0000-000000000000' THEN
        PERFORM lease.check_run_id(receive_messages.run_id); -- raises the precise error
    END IF;
    IF receive_messages.after_id IS NULL OR receive_messages.after_id < 0 THEN
        RAISE EXCEPTION 'after_id must be 0 or more' USING ERRCODE = '22023';
    END IF;
    IF receive_messages.max_count IS NULL OR receive_messages.max_count NOT BETWEEN 1 AND 64 THEN
        RAISE EXCEPTION 'max_count must be 1 to 64' USING ERRCODE = '22023';
    END IF;
    pub := lease.public_run_id(receive_messages.run_id);
    -- The lease, and whether a live message passed its expiry unmarked, in
    -- one statement.
    SELECT l.run_id, l.fence, l.expires_at,
           EXISTS (SELECT FROM lease.message x
                    WHERE x.account_id = receive_messages.account_id AND x.session_id = receive_messages.session_id
                      AND x.acked_at IS NULL AND x.expired_at IS NULL AND x.expires_at <= now_)
      INTO cur.run_id, cur.fence, cur.expires_at, due
      FROM lease.session_lease l
     WHERE l.account_id = receive_messages.account_id AND l.session_id = receive_messages.session_id;
    IF NOT FOUND OR cur.run_id <> pub OR cur.expires_at <= now_ THEN
        RAISE EXCEPTION 'run % does not hold %/%: only the holder receives its messages',
            pub, receive_messages.account_id, receive_messages.session_id
            USING ERRCODE = 'LM004';
    END IF;
    IF due THEN
        PERFORM lease.message_expire(receive_messages.account_id, receive_messages.session_id, now_, 16);
    END IF;
    FOR m IN
        SELECT * FROM lease.message x
         WHERE x.account_id = receive_messages.account_id AND x.session_id = receive_messages.session_id
           AND x.id > receive_messages.after_id
           AND x.acked_at IS NULL AND x.expired_at IS NULL AND x.expires_at > now_
         ORDER BY x.id
         LIMIT receive_messages.max_count
           FOR UPDATE
    LOOP
        prev := NULL;
        IF m.delivered_run IS DISTINCT FROM pub OR m.delivered_fence IS DISTINCT FROM cur.fence THEN
            prev := m.delivered_run;
            UPDATE lease.message x SET delivered_run = pub, delivered_fence = cur.fence, delivered_at = now_
             WHERE x.account_id = m.account_id AND x.session_id = m.session_id AND x.id = m.id;
            IF prev IS NULL THEN
                IF lease.message_event('message_delivered', m, pub, cur.fence, NULL, NULL, now_) IS NULL THEN
                    NULL; -- an expression, not PERFORM: see message_event
                END IF;
            ELSE
                IF lease.message_event('message_carried', m, pub, cur.fence, prev, m.delivered_fence, now_) IS NULL THEN
                    NULL; -- an expression, not PERFORM: see message_event
                END IF;
            END IF;
        END IF;
        RETURN NEXT ROW(m.id, m.kind, m.body, m.sender, m.actor, m.sent_at, m.expires_at, prev)::lease.received_message;
    END LOOP;
END
$fn$;

-- ack_one acknowledges message m, which the caller locked FOR UPDATE, for
-- run pub, which holds the conversation at fence (its lease row locked FOR
-- SHARE by the caller), at now_, and returns ack_message's outcome (below);
-- the message_acked event's payload is kept for pending_for as
-- message_event keeps it. ack_message's and ack_messages' one decision; no
-- role may call it.
CREATE OR REPLACE FUNCTION lease.ack_one(m lease.message, pub uuid, fence bigint, now_ timestamptz, pending_for text)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF m.acked_at IS NOT NULL THEN
        RETURN CASE WHEN m.acked_run = pub AND m.acked_fence = fence THEN 'acked_before' ELSE 'not_delivered' END;
    END IF;
    IF m.expired_at IS NOT NULL THEN
        RETURN 'expired';
    END IF;
    IF m.expires_at <= now_ THEN
        UPDATE lease.message x SET expired_at = now_
         WHERE x.account_id = m.account_id AND x.session_id = m.session_id AND x.id = m.id;
        IF lease.message_event('message_expired', m, m.delivered_run, m.delivered_fence, NULL, NULL, now_) IS NULL THEN
            NULL; -- an expression, not PERFORM: see message_event
        END IF;
        RETURN 'expired';
    END IF;
    IF m.delivered_run IS DISTINCT FROM pub OR m.delivered_fence IS DISTINCT FROM fence THEN
        RETURN 'not_delivered';
    END IF;
    UPDATE lease.message x SET acked_run = pub, acked_fence = fence, acked_at = now_
     WHERE x.account_id = m.account_id AND x.session_id = m.session_id AND x.id = m.id;
    IF lease.message_event('message_acked', m, pub, fence, NULL, NULL, now_, pending_for) IS NULL THEN
        NULL; -- an expression, not PERFORM: see message_event
    END IF;
    RETURN 'acked';
END
$fn$;

-- ack_message acknowledges message id of the conversation for run_id (the
-- caller's secret id), which must hold the conversation's unexpired lease
-- (SQLSTATE LM004 otherwise): its row is locked FOR SHARE, as
-- lease.check_fence locks it, so no other run can take the lease before the
-- acknowledgement commits. Outcomes:
--
--   acked          done (event message_acked, NOTIFY).
--   acked_before   this run (at this fence) acknowledged it already: nothing
--                  written.
--   expired        it passed its expiry unacknowledged (message_expired
--                  written now if it had not been).
--   not_delivered  no such message, or one this run has not received (or
--                  another run acknowledged): nothing written.
CREATE OR REPLACE FUNCTION lease.ack_message(account_id text, session_id text, run_id uuid, id bigint)
RETURNS text
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
    m lease.message;
BEGIN
    IF NOT coalesce(lease.key_ok(ack_message.account_id, ack_message.session_id), false) THEN
        PERFORM lease.check_key(ack_message.account_id, ack_message.session_id); -- raises the precise error
    END IF;
    IF ack_message.run_id IS NULL OR ack_message.run_id = '00000000-0000-0000-0000-000000000000' THEN
        PERFORM lease.check_run_id(ack_message.run_id); -- raises the precise error
    END IF;
    pub := lease.public_run_id(ack_message.run_id);
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = ack_message.account_id AND l.session_id = ack_message.session_id
       AND l.run_id = pub AND l.expires_at > now_
       FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % does not hold %/%: only the holder acknowledges its messages',
            pub, ack_message.account_id, ack_message.session_id
            USING ERRCODE = 'LM004';
    END IF;
    SELECT * INTO m FROM lease.message x
     WHERE x.account_id = ack_message.account_id AND x.session_id = ack_message.session_id AND x.id = ack_message.id
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'not_delivered';
    END IF;
    RETURN lease.ack_one(m, pub, cur.fence, now_, lease.pending_key(m.account_id, m.session_id, pub));
END
$fn$;

-- ack_messages acknowledges many of the conversation's messages for run_id
-- at once, as ack_message acknowledges one: ids (1 to 64 of them, no NULL;
-- a repeated id counts once), under one fence check (the lease row locked
-- FOR SHARE, as ack_message locks it: LM004 when the caller does not hold
-- the conversation's unexpired lease, and then nothing is written), the
-- messages locked in id order, in one transaction: one commit and one WAL
-- flush for the batch instead of one each. One row per distinct id (the
-- messages found in id order, then the ids of none), with ack_message's
-- outcome for it (an id of no message of this
-- conversation, or of one this run did not receive, is not_delivered), and
-- one message_acked event per message acknowledged. A caller that notifies
-- after its commit (lease.caller_notifies) finds the events' payloads in
-- the session (lease.pending_events, a JSON array of them, with
-- lease.pending_for the key and run: internal/sqlcall.NotifyPendingAll);
-- any other caller's are notified in the commit.
CREATE OR REPLACE FUNCTION lease.ack_messages(account_id text, session_id text, run_id uuid, ids bigint[])
RETURNS TABLE (id bigint, outcome text)
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
    m lease.message;
    quiet boolean := current_setting('lease.caller_notifies', true) IS NOT DISTINCT FROM extract(epoch FROM now())::text;
    pending_key text;
    payloads text[] := '{}';
    found_ids bigint[] := '{}';
    kept text;
BEGIN
    IF NOT coalesce(lease.key_ok(ack_messages.account_id, ack_messages.session_id), false) THEN
        PERFORM lease.check_key(ack_messages.account_id, ack_messages.session_id); -- raises the precise error
    END IF;
    IF ack_messages.run_id IS NULL OR ack_messages.run_id = '00000000-0000-0000-0000-000000000000' THEN
        PERFORM lease.check_run_id(ack_messages.run_id); -- raises the precise error
    END IF;
    IF ack_messages.ids IS NULL OR cardinality(ack_messages.ids) NOT BETWEEN 1 AND lease.message_limit()
       OR array_position(ack_messages.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be 1 to % message ids, none NULL', lease.message_limit() USING ERRCODE = '22023';
    END IF;
    pub := lease.public_run_id(ack_messages.run_id);
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = ack_messages.account_id AND l.session_id = ack_messages.session_id
       AND l.run_id = pub AND l.expires_at > now_
       FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % does not hold %/%: only the holder acknowledges its messages',
            pub, ack_messages.account_id, ack_messages.session_id
            USING ERRCODE = 'LM004';
    END IF;
    pending_key := lease.pending_key(ack_messages.account_id, ack_messages.session_id, pub);
    FOR m IN
        SELECT * FROM lease.message x
         WHERE x.account_id = ack_messages.account_id AND x.session_id = ack_messages.session_id
           AND x.id = ANY (ack_messages.ids)
         ORDER BY x.id
           FOR UPDATE
    LOOP
        found_ids := found_ids || m.id;
        id := m.id;
        outcome := lease.ack_one(m, pub, cur.fence, now_, pending_key);
        IF quiet AND outcome = 'acked' THEN
            payloads := payloads || current_setting('lease.pending_event');
        END IF;
        RETURN NEXT;
    END LOOP;
    IF quiet THEN
        kept := set_config('lease.pending_events', array_to_json(payloads)::text, false);
        kept := set_config('lease.pending_for', pending_key, false);
    END IF;
    IF cardinality(found_ids) < cardinality(ack_messages.ids) THEN -- ids of no message (or repeated ones)
        FOR id IN SELECT DISTINCT u FROM unnest(ack_messages.ids) u WHERE u <> ALL (found_ids) ORDER BY u LOOP
            outcome := 'not_delivered';
            RETURN NEXT;
        END LOOP;
    END IF;
END
$fn$;

-- message_state is where the conversation's message sent with idem_key is
-- (lease.message_status, created false), NULL when there is none (never
-- sent, or deleted by maintain_messages). It reads no body: lease_app's,
-- for a sender following its message.
CREATE OR REPLACE FUNCTION lease.message_state(account_id text, session_id text, idem_key text)
RETURNS lease.message_status
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    m lease.message;
BEGIN
    PERFORM lease.check_key(message_state.account_id, message_state.session_id);
    SELECT * INTO m FROM lease.message x
     WHERE x.account_id = message_state.account_id AND x.session_id = message_state.session_id
       AND x.idem_key = message_state.idem_key;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN lease.message_status_of(m, clock_timestamp(), false);
END
$fn$;

-- maintain_messages is the inbox's upkeep (leasetop maintain, lease_admin):
-- it writes the message_expired events of at most max_count (1 to 100000)
-- messages past their expiry, oldest first, and, when keep is not NULL,
-- deletes the messages that ended (acknowledged or expired) more than keep
-- before the database clock and the lock rows of conversations left without
-- messages. One row: how many it expired and deleted.
CREATE OR REPLACE FUNCTION lease.maintain_messages(keep interval DEFAULT NULL, max_count integer DEFAULT 1000)
RETURNS TABLE (expired integer, deleted bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '1s'
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
BEGIN
    IF maintain_messages.keep IS NOT NULL AND maintain_messages.keep < interval '0' THEN
        RAISE EXCEPTION 'keep must be a non-negative interval' USING ERRCODE = '22023';
    END IF;
    IF maintain_messages.max_count IS NULL OR maintain_messages.max_count NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'max_count must be 1 to 100000' USING ERRCODE = '22023';
    END IF;
    expired := lease.message_expire(NULL, NULL, now_, maintain_messages.max_count);
    deleted := 0;
    IF maintain_messages.keep IS NOT NULL THEN
        DELETE FROM lease.message x
         WHERE coalesce(x.acked_at, x.expired_at) < now_ - maintain_messages.keep;
        GET DIAGNOSTICS deleted = ROW_COUNT;
        DELETE FROM lease.inbox i
         WHERE (i.account_id, i.session_id) IN (
                SELECT b.account_id, b.session_id FROM lease.inbox b
                 WHERE NOT EXISTS (SELECT FROM lease.message x
                                    WHERE x.account_id = b.account_id AND x.session_id = b.session_id)
                   FOR UPDATE SKIP LOCKED);
    END IF;
    RETURN NEXT;
END
$fn$;
