-- leasetop: preempting a holder, and what a holder publishes about itself
-- (version 3). Runs after acquire.sql, as the lease objects' owner; every
-- statement is idempotent.
--
-- A lease row says whether its holder may be preempted (preemptible, set at
-- acquire, by default true) and may carry an attachment: a short opaque text
-- its holder publishes, such as the id of the stream its run writes to, so a
-- device that finds the session busy can join that run instead of starting
-- one. The attachment is no secret: it is readable like the rest of the row.
-- Like holder labels it passes lease.safe_text (no control, bidirectional or
-- invisible character), at most 1 KiB.
--
-- lease.preempt takes the lease now from an unexpired, preemptible holder:
-- the fence rises and the trigger records a 'preempted' event with both
-- runs, both labels and the reason (triggers.sql). Only members of the group
-- lease_preempt may call it (roles.sql).

-- The columns are added only where missing: an ALTER TABLE that changes
-- nothing would still take the tables' exclusive lock on every migrate.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.session_lease'::regclass
                      AND attname = 'preemptible' AND NOT attisdropped) THEN
        ALTER TABLE lease.session_lease ADD COLUMN preemptible boolean NOT NULL DEFAULT true;
    END IF;
    -- At most 1024 bytes that pass lease.safe_text: the domain's constraint
    -- (schema.sql, lease.use_text_domains).
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.session_lease'::regclass
                      AND attname = 'attachment' AND NOT attisdropped) THEN
        ALTER TABLE lease.session_lease ADD COLUMN attachment lease.attachment_text;
    END IF;
    -- The label of the run a transition replaced (a preempted event's victim,
    -- a handed_over event's old holder).
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.event'::regclass
                      AND attname = 'prev_holder' AND NOT attisdropped) THEN
        ALTER TABLE lease.event ADD COLUMN prev_holder text;
    END IF;
END
$$;

-- preempted_run is, per session, the last run lease.preempt took the lease
-- from and whether that run has said its work stopped (version 6). A
-- preempt ends the victim's lease at once, but not the work its program is
-- doing: fences refuse its fenced writes, nothing else. So a preemptor that
-- must not overlap the old work waits until the victim reports that it
-- stopped (lease.preempt_stopped: the library's Release after the loss;
-- leasetop run's once its command has exited), bounded by a grace of its
-- own (lease.preempt_pending). One row per session, replaced by each
-- preempt: bounded as lease.handover_ask is.
CREATE TABLE IF NOT EXISTS lease.preempted_run (
    account_id   text        NOT NULL,
    session_id   text        NOT NULL,
    run_id       uuid        NOT NULL, -- the preempted run, by its public id
    by_run_id    uuid        NOT NULL, -- the preemptor, by its public id
    preempted_at timestamptz NOT NULL,
    stopped_at   timestamptz,          -- when the preempted run said its work stopped
    PRIMARY KEY (account_id, session_id)
);

-- A preempt for a slot names its victim under the victim's session; the
-- preemptor finds it by its own run id (preempt_pending).
DO $$
BEGIN
    IF to_regclass('lease.preempted_run_by_idx') IS NULL THEN
        CREATE INDEX preempted_run_by_idx ON lease.preempted_run (account_id, by_run_id);
    END IF;
END
$$;

-- preempt_for_slot is lease.preempt's way to a slot of a full limit: it
-- ends the lease of the account's lowest-priority preemptible run that
-- holds a slot of the full limit the grant of pool needs (the pool's, when
-- it is full; otherwise the account's), of a priority below priority, and
-- of another session than session_id; the youngest of them first, the one
-- that loses least work. Its row is deleted as force_release deletes one:
-- the trigger records force_released with the preemptor's login as actor
-- and a reason naming the preemptor's run and both priorities (then
-- reason); the fence check and renewals of the victim fail from the commit
-- on; it is recorded in lease.preempted_run under its own session until it
-- says its work stopped. A run whose row another call holds locked is
-- skipped. Returns whether it ended one. Granted to nobody: lease.preempt
-- calls it, so only lease_preempt may.
CREATE OR REPLACE FUNCTION lease.preempt_for_slot(account_id text, session_id text, pub uuid, pool text,
                                                  priority smallint, reason text, now_ timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    in_pool text := '';
    v lease.session_lease;
    why text;
BEGIN
    IF coalesce(preempt_for_slot.pool, '') <> '' AND EXISTS (
           SELECT FROM lease.account_limit a
            WHERE a.account_id = preempt_for_slot.account_id AND a.pool = preempt_for_slot.pool
              AND a.slots <= (SELECT count(*) FROM lease.limit_slot t
                               WHERE t.account_id = a.account_id AND t.pool = a.pool
                                 AND EXISTS (SELECT FROM lease.session_lease l
                                              WHERE l.account_id = t.account_id AND l.session_id = t.session_id
                                                AND l.expires_at > now_ AND l.pool = t.pool))) THEN
        in_pool := preempt_for_slot.pool; -- the pool's limit is full: a victim of the pool frees its slots
    END IF;
    SELECT l.* INTO v FROM lease.session_lease l
      JOIN lease.limit_slot t ON t.account_id = l.account_id AND t.session_id = l.session_id AND t.pool = in_pool
     WHERE l.account_id = preempt_for_slot.account_id AND l.session_id <> preempt_for_slot.session_id
       AND l.expires_at > now_ AND l.preemptible AND l.priority < preempt_for_slot.priority
       AND (in_pool = '' OR l.pool = in_pool)
     ORDER BY l.priority, l.acquired_at DESC, l.session_id
     LIMIT 1
       FOR UPDATE OF l SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    why := 'preempted for a slot by run ' || pub || ', priority ' || preempt_for_slot.priority || ' over ' || v.priority;
    IF coalesce(preempt_for_slot.reason, '') <> '' AND octet_length(why || ': ' || preempt_for_slot.reason) <= 512 THEN
        why := why || ': ' || preempt_for_slot.reason;
    END IF;
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    PERFORM set_config('lease.op', 'force', true); -- the trigger records force_released (triggers.sql)
    PERFORM set_config('lease.reason', why, true);
    DELETE FROM lease.session_lease l
     WHERE l.account_id = v.account_id AND l.session_id = v.session_id AND l.fence = v.fence;
    PERFORM set_config('lease.op', '', true);
    PERFORM set_config('lease.reason', '', true);
    INSERT INTO lease.preempted_run AS p (account_id, session_id, run_id, by_run_id, preempted_at, stopped_at)
    VALUES (v.account_id, v.session_id, v.run_id, pub, now_, NULL)
    ON CONFLICT (account_id, session_id) DO UPDATE
       SET run_id = EXCLUDED.run_id, by_run_id = EXCLUDED.by_run_id,
           preempted_at = EXCLUDED.preempted_at, stopped_at = NULL;
    RETURN true;
END
$fn$;

-- check_holder_options raises SQLSTATE 22023 unless attachment is NULL or at
-- most 1024 bytes that pass lease.safe_text, and preemptible is not NULL.
CREATE OR REPLACE FUNCTION lease.check_holder_options(preemptible boolean, attachment text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF preemptible IS NULL THEN
        RAISE EXCEPTION 'preemptible must not be NULL' USING ERRCODE = '22023';
    END IF;
    PERFORM lease.check_label('attachment', attachment, 1024);
END
$fn$;

-- acquire_with is lease.acquire with the holder's options: whether it may be
-- preempted, and its attachment ('' or NULL: none). It returns what
-- lease.acquire returns; the options are set on the lease it grants (or
-- holds already, for a retried call) in the same transaction, so nobody sees
-- the lease without them. lease.acquire itself takes the defaults
-- (preemptible, no attachment).
DROP FUNCTION IF EXISTS lease.acquire_with(text, text, uuid, interval, text, boolean, text); -- version 6's: now the pool below
CREATE OR REPLACE FUNCTION lease.acquire_with(
    account_id text, session_id text, run_id uuid, ttl interval, holder text,
    preemptible boolean, attachment text, pool text DEFAULT '', priority smallint DEFAULT 0)
RETURNS SETOF lease.grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    g lease.grant;
BEGIN
    PERFORM lease.check_holder_options(acquire_with.preemptible, acquire_with.attachment);
    SELECT * INTO g FROM lease.acquire(acquire_with.account_id, acquire_with.session_id,
                                       acquire_with.run_id, acquire_with.ttl, acquire_with.holder,
                                       acquire_with.pool, acquire_with.priority);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- A grant has locked the row already; a retry's unchanged grant locks it
    -- here, and is no grant if the lease moved on meanwhile.
    UPDATE lease.session_lease l
       SET preemptible = acquire_with.preemptible, attachment = nullif(acquire_with.attachment, '')
     WHERE l.account_id = acquire_with.account_id AND l.session_id = acquire_with.session_id
       AND l.run_id = lease.public_run_id(acquire_with.run_id) AND l.fence = g.fence;
    IF FOUND THEN
        RETURN NEXT g;
    END IF;
END
$fn$;

-- set_attachment replaces the attachment of run_id's unexpired lease ('' or
-- NULL: none) and returns true, or returns false and changes nothing when
-- run_id does not hold it. run_id is the run's secret id: only the holder
-- publishes its attachment. It is no ownership change: no event, no
-- notification.
CREATE OR REPLACE FUNCTION lease.set_attachment(account_id text, session_id text, run_id uuid, attachment text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM lease.check_key(set_attachment.account_id, set_attachment.session_id);
    PERFORM lease.check_label('attachment', set_attachment.attachment, 1024);
    UPDATE lease.session_lease l
       SET attachment = nullif(set_attachment.attachment, '')
     WHERE l.account_id = set_attachment.account_id
       AND l.session_id = set_attachment.session_id
       AND l.run_id = lease.public_run_id(set_attachment.run_id)
       AND l.expires_at > clock_timestamp();
    RETURN FOUND;
END
$fn$;

-- preempt grants the session to run_id for ttl now, taking it from the run
-- that holds it, if any: the holder this call found when it began. It
-- returns one row (run_id, fence, expires_at), as lease.acquire does, when
-- run_id holds the lease afterwards:
--
--   - the key was free or its lease expired: an ordinary grant (acquired or
--     taken_over; nobody was preempted);
--   - an unexpired, preemptible lease: it is replaced, with a new fence drawn
--     under the row lock, and the trigger records 'preempted' (run_id and
--     prev_run_id, holder and prev_holder, the reason and the caller's login
--     as actor). The preempted run's renewals and fence checks fail from the
--     commit on;
--   - run_id's own unexpired lease: unchanged (a retried call).
--
-- A preempted holder is recorded in lease.preempted_run until it says its
-- work stopped (preempt_stopped); the preemptor asks with preempt_pending.
--
-- It returns zero rows when the key changed hands while the call waited for
-- the row lock (another preempt, or an acquire, got there first): the caller
-- meant to preempt the holder it saw, not the winner of a race, so of
-- preempts that race for one holder exactly one wins. It raises SQLSTATE
-- LP001 (nothing written) when the holder declared at acquire that it must
-- not be preempted.
--
-- The new lease takes preemptible and attachment as lease.acquire_with does,
-- and its pool and priority as lease.acquire does. In a limited account it
-- takes its slots as lease.acquire does (limits.sql): the session's own
-- slot when it preempts a run of it, which the slot follows; a free one
-- otherwise. When the account or the pool is at its limit it preempts for a
-- slot (preempt_for_slot): the lowest-priority preemptible run of the full
-- limit whose priority is below priority loses its lease, and its slot is
-- this grant's; with no such run it returns zero rows (nothing written but
-- the limit_refused event). It does not queue behind the account's waiters
-- (queue.sql): a preempt is the privileged way past them.
-- A fresh INSERT is checked against a fence drawn meanwhile as in
-- lease.acquire (SQLSTATE 40001: nothing granted, retry).
DROP FUNCTION IF EXISTS lease.preempt(text, text, uuid, interval, text, text, boolean, text); -- version 6's: now the pool below
CREATE OR REPLACE FUNCTION lease.preempt(
    account_id text, session_id text, run_id uuid, ttl interval, holder text, reason text,
    preemptible boolean DEFAULT true, attachment text DEFAULT NULL,
    pool text DEFAULT '', priority smallint DEFAULT 0)
RETURNS SETOF lease.grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    seen lease.session_lease;
    cur lease.session_lease;
    granted lease.grant;
    inserted boolean;
    held boolean;
    slots lease.limit_slot[]; -- the slots this grant takes (limits.sql), NULL without a limit
BEGIN
    IF NOT coalesce(lease.grant_ok(preempt.account_id, preempt.session_id, preempt.run_id,
                                   preempt.ttl, preempt.holder, now_), false) THEN
        PERFORM lease.refuse_grant(preempt.account_id, preempt.session_id, preempt.run_id,
                                   preempt.ttl, preempt.holder, now_);
    END IF;
    PERFORM lease.check_label('reason', preempt.reason, 512);
    PERFORM lease.check_holder_options(preempt.preemptible, preempt.attachment);
    PERFORM lease.check_pool(preempt.pool);
    pub := lease.public_run_id(preempt.run_id);

    -- The holder this call means to preempt: the one it finds first, before
    -- it waits for the row lock.
    SELECT * INTO seen FROM lease.session_lease l
     WHERE l.account_id = preempt.account_id AND l.session_id = preempt.session_id;
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = preempt.account_id AND l.session_id = preempt.session_id
       FOR UPDATE;
    held := FOUND;
    now_ := clock_timestamp(); -- decide at the moment the row is ours

    -- Limits (limits.sql): an account without one pays this one probe. The
    -- session's row is locked above, as lease.acquire locks it before take_slots.
    IF EXISTS (SELECT FROM lease.account_limit a WHERE a.account_id = preempt.account_id) THEN
        slots := lease.take_slots(preempt.account_id, preempt.session_id, preempt.pool, now_);
        IF slots = '{}' THEN
            -- A lower-priority run of the account loses its lease, and its
            -- slot is this grant's; if another call took the slot meanwhile,
            -- the victim keeps its lease: the block's subtransaction undoes
            -- the deletion, its event and its notification.
            BEGIN
                IF lease.preempt_for_slot(preempt.account_id, preempt.session_id, pub, preempt.pool,
                                          coalesce(preempt.priority, 0::smallint), preempt.reason, now_) THEN
                    slots := lease.take_slots(preempt.account_id, preempt.session_id, preempt.pool, clock_timestamp());
                    IF slots = '{}' THEN
                        RAISE EXCEPTION 'the slot went to another call' USING ERRCODE = 'LP002';
                    END IF;
                END IF;
            EXCEPTION WHEN SQLSTATE 'LP002' THEN
                slots := '{}';
            END;
        END IF;
        IF slots = '{}' THEN
            PERFORM lease.limit_refused(preempt.account_id, preempt.session_id, pub, preempt.pool, preempt.holder, now_);
            RETURN; -- at its limit, and no run it may preempt: busy
        END IF;
        -- take_slots named them in lease.slots, for the grant's event.
        now_ := clock_timestamp(); -- the grant starts once its slots are its own (lease.acquire)
    ELSE
        PERFORM set_config('lease.slots', '', true); -- no slots: the trigger names none, whatever a caller set
    END IF;

    IF NOT held THEN
        -- Free (or released while this call waited): an ordinary grant.
        IF lease.follow_failover() THEN NULL; END IF; -- before the fence and the event: see follow_failover
        PERFORM set_config('lease.op', '', true); -- the trigger records this INSERT, whatever a caller set (triggers.sql)
        INSERT INTO lease.session_lease AS l
            (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at, preemptible, attachment,
             pool, priority)
        VALUES (preempt.account_id, preempt.session_id, pub, coalesce(preempt.holder, ''),
                nextval('lease.fence_seq'), now_, now_, now_ + preempt.ttl,
                preempt.preemptible, nullif(preempt.attachment, ''), preempt.pool, coalesce(preempt.priority, 0))
        ON CONFLICT (account_id, session_id) DO NOTHING
        RETURNING l.fence, l.expires_at INTO granted.fence, granted.expires_at;
        IF lease.slots_granted(slots, preempt.session_id, FOUND) THEN NULL; END IF;
        IF granted.fence IS NULL THEN
            RETURN; -- acquired by another run meanwhile: not the holder this call saw
        END IF;
        -- The INSERT drew its fence before it knew the key was free: as in lease.acquire.
        IF lease.fence_overtaken(granted.fence) THEN
            PERFORM lease.check_fence_race('preempt', preempt.account_id, preempt.session_id, granted.fence, now_);
        END IF;
        granted.run_id := preempt.run_id;
        RETURN NEXT granted;
        RETURN;
    END IF;

    IF cur.run_id = pub AND cur.expires_at > now_ THEN
        IF lease.slots_granted(slots, preempt.session_id, true) THEN NULL; END IF;
        granted := (preempt.run_id, cur.fence, cur.expires_at);
        RETURN NEXT granted; -- a retry: its own lease, unchanged
        RETURN;
    END IF;
    IF cur.run_id <> pub AND cur.fence IS DISTINCT FROM seen.fence THEN
        IF lease.slots_granted(slots, preempt.session_id, false) THEN NULL; END IF;
        RETURN; -- the key changed hands while this call waited: another won
    END IF;
    IF cur.expires_at > now_ AND NOT cur.preemptible THEN
        RAISE EXCEPTION 'lease %/% is held by run % (%), which declared that it must not be preempted',
            preempt.account_id, preempt.session_id, cur.run_id, cur.holder USING ERRCODE = 'LP001';
    END IF;

    IF lease.follow_failover() THEN NULL; END IF; -- before the fence and the event: see follow_failover
    -- Labels the UPDATE for the trigger, as force_release labels its DELETE:
    -- an unexpired lease replaced with lease.op 'preempt' is recorded as
    -- preempted, with this reason (triggers.sql).
    PERFORM set_config('lease.op', 'preempt', true);
    PERFORM set_config('lease.reason', coalesce(preempt.reason, ''), true);
    UPDATE lease.session_lease l
       SET run_id      = pub,
           holder      = coalesce(preempt.holder, ''),
           fence       = nextval('lease.fence_seq'), -- under the row lock: rises in preempt order
           acquired_at = now_,
           renewed_at  = now_,
           expires_at  = now_ + preempt.ttl,
           preemptible = preempt.preemptible,
           attachment  = nullif(preempt.attachment, ''),
           pool        = preempt.pool,
           priority    = coalesce(preempt.priority, 0)
     WHERE l.account_id = preempt.account_id AND l.session_id = preempt.session_id
    RETURNING l.fence, l.expires_at INTO granted.fence, granted.expires_at;
    IF lease.slots_granted(slots, preempt.session_id, true) THEN NULL; END IF;
    PERFORM set_config('lease.op', '', true);
    PERFORM set_config('lease.reason', '', true);
    -- The victim, until it says its work stopped (preempt_stopped).
    IF cur.expires_at > now_ THEN
        INSERT INTO lease.preempted_run AS p (account_id, session_id, run_id, by_run_id, preempted_at, stopped_at)
        VALUES (preempt.account_id, preempt.session_id, cur.run_id, pub, now_, NULL)
        ON CONFLICT (account_id, session_id) DO UPDATE
           SET run_id = EXCLUDED.run_id, by_run_id = EXCLUDED.by_run_id,
               preempted_at = EXCLUDED.preempted_at, stopped_at = NULL;
    END IF;
    granted.run_id := preempt.run_id;
    RETURN NEXT granted;
END
$fn$;

-- preempt_stopped is the preempted run's word that its work has stopped:
-- run_id (the run's own, secret id) was preempted on the session and its
-- program has ended what it was doing. It returns true when that was news,
-- false (nothing written) when run_id is not the session's last preempted
-- run or said so already. No event: the preempted event tells the story.
CREATE OR REPLACE FUNCTION lease.preempt_stopped(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM lease.check_key(preempt_stopped.account_id, preempt_stopped.session_id);
    UPDATE lease.preempted_run p SET stopped_at = clock_timestamp()
     WHERE p.account_id = preempt_stopped.account_id AND p.session_id = preempt_stopped.session_id
       AND p.run_id = lease.public_run_id(preempt_stopped.run_id) AND p.stopped_at IS NULL;
    RETURN FOUND;
END
$fn$;

-- preempt_pending reports whether the run that run_id (the preemptor's own,
-- secret id) preempted on the session has not yet said its work stopped
-- (preempt_stopped), on the session or, for a preempt for a slot, on the
-- victim's session of the same account. False when it did, when run_id
-- preempted nobody, or when that session was preempted again since.
CREATE OR REPLACE FUNCTION lease.preempt_pending(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM lease.check_key(preempt_pending.account_id, preempt_pending.session_id);
    -- A preempt for a slot (preempt_for_slot) records its victim under the
    -- victim's session: found by the preemptor's run id.
    RETURN EXISTS (SELECT FROM lease.preempted_run p
                    WHERE p.account_id = preempt_pending.account_id
                      AND p.by_run_id = lease.public_run_id(preempt_pending.run_id) AND p.stopped_at IS NULL);
END
$fn$;

REVOKE ALL ON FUNCTION lease.check_holder_options(boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.preempt_stopped(text, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.preempt_pending(text, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.acquire_with(text, text, uuid, interval, text, boolean, text, text, smallint) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.set_attachment(text, text, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.preempt(text, text, uuid, interval, text, text, boolean, text, text, smallint) FROM PUBLIC;
