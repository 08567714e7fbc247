-- leasetop hand-over: a run that finds a session busy asks its holder to hand
-- the lease over ("continue on this device"), and the holder answers: it hands
-- over, in one transaction that moves the lease to the asker's run with a
-- higher fence, or declines. Applied after functions.sql, as the schema's owner.
--
-- One ask per session, in lease.handover_ask: the pending one, or the last
-- one, ended. An ask names the asker's public run id and label, the holder it
-- was addressed to (public run id and fence) and its deadline on the database
-- clock. While it is pending, every other asker is refused, told who asked and
-- until when, and writes nothing; the same asker asking again writes nothing
-- either. So the history gets at most two rows per ask (handover_asked, then
-- handed_over, handover_declined or handover_expired), and a run can ask only
-- where it could acquire (EXECUTE is lease_app's, roles.sql).
--
-- An ask that passes its deadline unanswered ends as handover_expired when it
-- is next observed under its row lock: by the asker asking again (the library
-- asks once more at its deadline: that call decides, atomically, between a
-- hand-over that made it and an expiry), by another asker, or by the holder's
-- late hand_over or decline_handover, which are refused. Nothing else writes
-- it; until then readers show an ask whose deadline passed as expired. An ask
-- whose holder no longer holds the lease (released, expired, taken over) ends
-- the same way when observed, with the reason 'the lease changed hands'.
--
-- Every function answers with a lease.handover_answer: outcome, the ask's
-- asker (public run id, label), the holder it addressed (public run id), its
-- deadline and the time left to it on the database clock, and the fence
-- handed over.

CREATE TABLE IF NOT EXISTS lease.handover_ask (
    account_id    text        NOT NULL,
    session_id    text        NOT NULL,
    asker_run_id  uuid        NOT NULL, -- lease.public_run_id of the asker's run id
    asker         text        NOT NULL DEFAULT '',
    holder_run_id uuid        NOT NULL, -- the holder asked, by its public run id
    holder_fence  bigint      NOT NULL,
    state         text        NOT NULL,
    asked_at      timestamptz NOT NULL,
    until_at      timestamptz NOT NULL,
    ended_at      timestamptz,
    fence         bigint,               -- the fence handed over
    PRIMARY KEY (account_id, session_id),
    CONSTRAINT handover_ask_state_check CHECK (state IN ('pending', 'handed_over', 'declined', 'expired')),
    CONSTRAINT handover_ask_asker_check CHECK (octet_length(asker) <= 256 AND lease.safe_text(asker))
);

DO $$
BEGIN
    IF to_regtype('lease.handover_answer') IS NULL THEN
        CREATE TYPE lease.handover_answer AS (
            outcome       text,        -- see each function
            asker_run_id  uuid,
            asker         text,
            holder_run_id uuid,
            until_at      timestamptz,
            remaining     interval,    -- until_at - now on the database clock, at least 0
            fence         bigint);
    END IF;
END
$$;

-- handover_event appends one ask event (handover_asked, handover_declined,
-- handover_expired) naming both runs: run_id is the asker, prev_run_id the
-- holder asked; fence the holder's, expires_at the ask's deadline, holder
-- the asker's label. It notifies lease_events with the row.
CREATE OR REPLACE FUNCTION lease.handover_event(kind text, a lease.handover_ask, at timestamptz, reason text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
BEGIN
    IF lease.follow_timeline() THEN NULL; END IF; -- before the event: see follow_timeline
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, expires_at, holder, reason)
    VALUES (handover_event.at, handover_event.kind, a.account_id, a.session_id, a.asker_run_id, a.holder_run_id,
            a.holder_fence, a.until_at, a.asker, handover_event.reason)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
END
$fn$;

-- handover_end ends a pending ask (a, locked by the caller) as expired, with
-- reason, and returns it ended.
CREATE OR REPLACE FUNCTION lease.handover_end(a lease.handover_ask, now_ timestamptz, reason text)
RETURNS lease.handover_ask
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    UPDATE lease.handover_ask h SET state = 'expired', ended_at = now_
     WHERE h.account_id = a.account_id AND h.session_id = a.session_id;
    a.state := 'expired';
    a.ended_at := now_;
    PERFORM lease.handover_event('handover_expired', a, now_, reason);
    RETURN a;
END
$fn$;

-- handover_answer_of is the answer naming ask a.
CREATE OR REPLACE FUNCTION lease.handover_answer_of(outcome text, a lease.handover_ask, now_ timestamptz)
RETURNS lease.handover_answer
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
    SELECT ROW(outcome, a.asker_run_id, a.asker, a.holder_run_id, a.until_at,
               greatest(a.until_at - now_, interval '0'), a.fence)::lease.handover_answer
$fn$;

-- ask_handover records run_id's ask to the run holding the session, pending
-- for ttl (more than 0, at most 1 hour) on the database clock, labelled
-- holder (the label the asker will hold the lease under). Outcomes:
--
--   asked        a new ask was recorded (event handover_asked, NOTIFY).
--   pending      this run's ask is pending: nothing written.
--   busy         another run's ask is pending: refused, nothing written; the
--                answer names that asker and its deadline.
--   handed_over  the holder handed the lease to this run: claim it with
--                lease.acquire (same run id), which returns it.
--   declined     the holder declined this run's ask.
--   expired      this run's ask passed its deadline unanswered, or another
--                run holds the lease now (written now if it had not been:
--                handover_expired).
--   free         nobody holds an unexpired lease: acquire it; nothing asked
--                (this run's pending ask, if any, ended: handover_expired).
--   held         this run holds the lease itself.
CREATE OR REPLACE FUNCTION lease.ask_handover(account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS lease.handover_answer
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
    a lease.handover_ask;
    have boolean;
    changed boolean;
    attempt integer;
BEGIN
    PERFORM lease.check_key(ask_handover.account_id, ask_handover.session_id);
    IF ask_handover.ttl IS NULL OR ask_handover.ttl <= interval '0' OR ask_handover.ttl > interval '1 hour'
       OR NOT coalesce(now_ + ask_handover.ttl > now_ AND now_ + ask_handover.ttl <= now_ + interval '1 hour', false) THEN
        RAISE EXCEPTION 'ask ttl must be greater than 0 and at most 1 hour, got %', coalesce(ask_handover.ttl::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    PERFORM lease.check_label('holder', ask_handover.holder, 256);
    PERFORM lease.check_run_id(ask_handover.run_id);
    pub := lease.public_run_id(ask_handover.run_id);

    FOR attempt IN 1..2 LOOP
        SELECT * INTO cur FROM lease.session_lease l
         WHERE l.account_id = ask_handover.account_id AND l.session_id = ask_handover.session_id;
        SELECT * INTO a FROM lease.handover_ask h
         WHERE h.account_id = ask_handover.account_id AND h.session_id = ask_handover.session_id
           FOR UPDATE;
        have := FOUND;
        changed := false;
        IF have AND a.state = 'pending' THEN
            IF a.until_at <= now_ THEN
                a := lease.handover_end(a, now_, 'no answer by the deadline');
            ELSIF cur.run_id IS DISTINCT FROM a.holder_run_id OR cur.expires_at <= now_ THEN
                a := lease.handover_end(a, now_, 'the lease changed hands');
                changed := true;
            END IF;
        END IF;
        IF have AND a.asker_run_id = pub THEN
            IF a.state = 'pending' THEN
                RETURN lease.handover_answer_of('pending', a, now_);
            END IF;
            IF changed AND (cur.run_id IS NULL OR cur.expires_at <= now_) THEN
                RETURN lease.handover_answer_of('free', a, now_); -- the holder let go: acquire it
            END IF;
            RETURN lease.handover_answer_of(a.state, a, now_); -- handed_over, declined, expired
        END IF;
        IF have AND a.state = 'pending' THEN
            RETURN lease.handover_answer_of('busy', a, now_);
        END IF;
        IF cur.run_id IS NULL OR cur.expires_at <= now_ THEN
            RETURN ROW('free', NULL, NULL, NULL, NULL, NULL, NULL)::lease.handover_answer;
        END IF;
        IF cur.run_id = pub THEN
            RETURN ROW('held', NULL, NULL, pub, NULL, NULL, cur.fence)::lease.handover_answer;
        END IF;

        a := ROW(ask_handover.account_id, ask_handover.session_id, pub, coalesce(ask_handover.holder, ''),
                 cur.run_id, cur.fence, 'pending', now_, now_ + ask_handover.ttl, NULL, NULL)::lease.handover_ask;
        IF have THEN
            UPDATE lease.handover_ask h
               SET asker_run_id = a.asker_run_id, asker = a.asker, holder_run_id = a.holder_run_id,
                   holder_fence = a.holder_fence, state = a.state, asked_at = a.asked_at,
                   until_at = a.until_at, ended_at = NULL, fence = NULL
             WHERE h.account_id = a.account_id AND h.session_id = a.session_id;
        ELSE
            INSERT INTO lease.handover_ask VALUES (a.*) ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                CONTINUE; -- another asker's first ask on this session committed meanwhile: decide again
            END IF;
        END IF;
        PERFORM lease.handover_event('handover_asked', a, now_, NULL);
        RETURN lease.handover_answer_of('asked', a, now_);
    END LOOP;
    RAISE EXCEPTION 'asks on %/% keep changing; retry', ask_handover.account_id, ask_handover.session_id
        USING ERRCODE = '40001';
END
$fn$;

-- hand_over moves the session's lease from run_id, its holder, to the run of
-- the ask pending for it, in this one transaction: the row gets the asker's
-- public run id and label, a fence drawn under the row lock (so it rises),
-- and an expiry now + ttl; the asker's lease.acquire with its own run id
-- then returns that grant. Nobody can take the lease in between: it is
-- never free. The UPDATE is recorded by the trigger as handed_over (both
-- runs, both fences; NOTIFY). Outcomes:
--
--   handed_over  done: the answer names the asker and the new fence.
--   expired      the ask's deadline passed (handover_expired written now):
--                the lease stays with run_id.
--   no_ask       no ask is pending for run_id: nothing changed.
--   not_held     run_id holds no unexpired lease on the session.
CREATE OR REPLACE FUNCTION lease.hand_over(account_id text, session_id text, run_id uuid, ttl interval)
RETURNS lease.handover_answer
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
    a lease.handover_ask;
    f bigint;
BEGIN
    PERFORM lease.check_key(hand_over.account_id, hand_over.session_id);
    PERFORM lease.check_ttl_span(hand_over.ttl, now_);
    pub := lease.public_run_id(hand_over.run_id);
    -- The lease row first, then the ask: the order decline_handover keeps too.
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = hand_over.account_id AND l.session_id = hand_over.session_id
       FOR UPDATE;
    IF NOT FOUND OR cur.run_id IS DISTINCT FROM pub OR cur.expires_at <= now_ THEN
        RETURN ROW('not_held', NULL, NULL, NULL, NULL, NULL, NULL)::lease.handover_answer;
    END IF;
    SELECT * INTO a FROM lease.handover_ask h
     WHERE h.account_id = hand_over.account_id AND h.session_id = hand_over.session_id
       FOR UPDATE;
    IF NOT FOUND OR a.state <> 'pending' OR a.holder_run_id <> pub THEN
        RETURN ROW('no_ask', NULL, NULL, NULL, NULL, NULL, NULL)::lease.handover_answer;
    END IF;
    IF a.until_at <= now_ THEN
        a := lease.handover_end(a, now_, 'no answer by the deadline');
        RETURN lease.handover_answer_of('expired', a, now_);
    END IF;

    IF lease.follow_timeline() THEN NULL; END IF; -- before the fence and the event: see follow_timeline
    f := nextval('lease.fence_seq'); -- under the row lock: rises in ownership order
    UPDATE lease.handover_ask h SET state = 'handed_over', ended_at = now_, fence = f
     WHERE h.account_id = a.account_id AND h.session_id = a.session_id;
    a.fence := f;
    -- The trigger records this UPDATE as handed_over, not taken_over, when
    -- lease.op says so and the ask row above matches the new owner and fence
    -- (a caller cannot dress a takeover up as a hand-over by setting lease.op).
    PERFORM set_config('lease.op', 'handover', true);
    UPDATE lease.session_lease l
       SET run_id = a.asker_run_id, holder = a.asker, fence = f,
           acquired_at = now_, renewed_at = now_, expires_at = now_ + hand_over.ttl
     WHERE l.account_id = hand_over.account_id AND l.session_id = hand_over.session_id;
    PERFORM set_config('lease.op', '', true);
    RETURN lease.handover_answer_of('handed_over', a, now_);
END
$fn$;

-- decline_handover refuses the ask pending for run_id, the holder: the ask
-- ends as declined (event handover_declined, NOTIFY) and the lease stays.
-- Outcomes: declined, expired (its deadline had passed: handover_expired),
-- no_ask, not_held, as for hand_over.
CREATE OR REPLACE FUNCTION lease.decline_handover(account_id text, session_id text, run_id uuid)
RETURNS lease.handover_answer
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
    a lease.handover_ask;
BEGIN
    PERFORM lease.check_key(decline_handover.account_id, decline_handover.session_id);
    pub := lease.public_run_id(decline_handover.run_id);
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = decline_handover.account_id AND l.session_id = decline_handover.session_id
       FOR SHARE;
    IF NOT FOUND OR cur.run_id IS DISTINCT FROM pub OR cur.expires_at <= now_ THEN
        RETURN ROW('not_held', NULL, NULL, NULL, NULL, NULL, NULL)::lease.handover_answer;
    END IF;
    SELECT * INTO a FROM lease.handover_ask h
     WHERE h.account_id = decline_handover.account_id AND h.session_id = decline_handover.session_id
       FOR UPDATE;
    IF NOT FOUND OR a.state <> 'pending' OR a.holder_run_id <> pub THEN
        RETURN ROW('no_ask', NULL, NULL, NULL, NULL, NULL, NULL)::lease.handover_answer;
    END IF;
    IF a.until_at <= now_ THEN
        a := lease.handover_end(a, now_, 'no answer by the deadline');
        RETURN lease.handover_answer_of('expired', a, now_);
    END IF;
    UPDATE lease.handover_ask h SET state = 'declined', ended_at = now_
     WHERE h.account_id = a.account_id AND h.session_id = a.session_id;
    a.state := 'declined';
    a.ended_at := now_;
    PERFORM lease.handover_event('handover_declined', a, now_, NULL);
    RETURN lease.handover_answer_of('declined', a, now_);
END
$fn$;

-- withdraw_handover ends run_id's own pending ask, as the asker gives up
-- waiting (handover_expired, reason 'withdrawn by the asker'): expired. When
-- the holder had handed the lease over already it answers handed_over, and
-- the asker releases the lease with lease.release. Otherwise no_ask.
CREATE OR REPLACE FUNCTION lease.withdraw_handover(account_id text, session_id text, run_id uuid)
RETURNS lease.handover_answer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    a lease.handover_ask;
BEGIN
    PERFORM lease.check_key(withdraw_handover.account_id, withdraw_handover.session_id);
    pub := lease.public_run_id(withdraw_handover.run_id);
    SELECT * INTO a FROM lease.handover_ask h
     WHERE h.account_id = withdraw_handover.account_id AND h.session_id = withdraw_handover.session_id
       FOR UPDATE;
    IF NOT FOUND OR a.asker_run_id IS DISTINCT FROM pub THEN
        RETURN ROW('no_ask', NULL, NULL, NULL, NULL, NULL, NULL)::lease.handover_answer;
    END IF;
    IF a.state = 'pending' THEN
        a := lease.handover_end(a, now_, CASE WHEN a.until_at <= now_ THEN 'no answer by the deadline'
                                              ELSE 'withdrawn by the asker' END);
        RETURN lease.handover_answer_of('expired', a, now_);
    END IF;
    IF a.state = 'handed_over' THEN
        RETURN lease.handover_answer_of('handed_over', a, now_);
    END IF;
    RETURN lease.handover_answer_of('no_ask', a, now_);
END
$fn$;

REVOKE ALL ON FUNCTION
    lease.handover_event(text, lease.handover_ask, timestamptz, text),
    lease.handover_end(lease.handover_ask, timestamptz, text),
    lease.handover_answer_of(text, lease.handover_ask, timestamptz),
    lease.ask_handover(text, text, uuid, interval, text),
    lease.hand_over(text, text, uuid, interval),
    lease.decline_handover(text, text, uuid),
    lease.withdraw_handover(text, text, uuid)
    FROM PUBLIC;
