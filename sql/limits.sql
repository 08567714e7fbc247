-- leasetop: limits. At most N live runs per account, and per named pool
-- within it (issue 40), held as slots that are leases' own.
--
-- lease.account_limit says how many runs an account (pool '') or one of its
-- pools may have live at once; lease.limit_slot holds one row per slot,
-- numbered 1..slots, each pointing at the session whose lease holds it. A
-- slot has no expiry of its own: it is held while the lease of the session
-- it names is unexpired (and, for a named pool, is in that pool), so it frees
-- at the instant that lease ends, on the database clock: release and forced
-- release delete the lease row, expiry passes its expires_at. Renewals never
-- touch a slot. A takeover, a preempt or a hand-over of the same session
-- keeps it: the slot names the session, so it follows the conversation to
-- its new run, and is never freed and taken again.
--
-- Every granting path (lease.acquire, and through it acquire_with,
-- acquire_quiet and the queue's grant; lease.preempt) takes the run's slots
-- before it writes the lease (lease.take_slots): one probe of account_limit,
-- empty for an account without a limit, which pays nothing else. A limited
-- account's grant locks, per limit that applies (the account's '' and the
-- run's pool), one slot FOR UPDATE SKIP LOCKED that is free: naming this
-- session, no session, or a session whose lease is gone or expired. Nobody
-- waits for a slot's lock. An expired occupant's lease row is locked (SKIP
-- LOCKED) and written (lease.slot_free): a renewal of that lease that read
-- the row before, and waits for its lock, then re-reads it and decides on the
-- clock after the wait (renew.sql compares expires_at with clock_timestamp()),
-- so it cannot extend a lease whose slot was just given away (docs/DESIGN.md,
-- Limits). No free slot: the account is busy, and the call grants nothing, as
-- for a held session.

DO $$
BEGIN
    -- The pool a lease counts against ('' none: only the account's limit),
    -- and the priority its run declared (preempting for a slot takes the
    -- lowest). Added in place: a version-6 table keeps its rows.
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.session_lease'::regclass
                      AND attname = 'pool' AND NOT attisdropped) THEN
        ALTER TABLE lease.session_lease ADD COLUMN pool text NOT NULL DEFAULT '';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.session_lease'::regclass
                      AND attname = 'priority' AND NOT attisdropped) THEN
        ALTER TABLE lease.session_lease ADD COLUMN priority smallint NOT NULL DEFAULT 0;
    END IF;
END
$$;

-- An account's limit (pool '') or a pool's within it: at most slots live runs.
CREATE TABLE IF NOT EXISTS lease.account_limit (
    account_id text        NOT NULL,
    pool       text        NOT NULL DEFAULT '',
    slots      integer     NOT NULL CHECK (slots >= 0),
    set_at     timestamptz NOT NULL,
    set_by     text        NOT NULL,
    PRIMARY KEY (account_id, pool)
);

-- The slots of a limit: rows 1..slots, made by lease.set_limit. session_id
-- names the session whose unexpired lease holds the slot (NULL: free).
-- Rows above slots are a lowered limit's live runs, kept until they end.
CREATE TABLE IF NOT EXISTS lease.limit_slot (
    account_id text    NOT NULL,
    pool       text    NOT NULL,
    slot       integer NOT NULL,
    session_id text,
    PRIMARY KEY (account_id, pool, slot)
);

-- check_pool raises SQLSTATE 22023 unless pool is '' or a pool name: at most
-- 128 bytes that pass lease.safe_text.
CREATE OR REPLACE FUNCTION lease.check_pool(pool text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF pool IS NULL OR octet_length(pool) > 128 OR NOT lease.safe_text(pool) THEN
        RAISE EXCEPTION 'invalid pool: at most 128 bytes, no control or invisible characters'
            USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- slot_free reports whether a slot of account_id's limit for pool, naming
-- occupant, may go to session me at now_: it names nobody or me, or
-- occupant's lease is gone, is in another pool (a named pool's slot), or has
-- expired. An expired lease's row is locked (SKIP LOCKED: locked by another
-- call, the slot is not free) and written in place, unchanged, so that a
-- renewal of it waiting for that lock re-reads the row and decides on the
-- clock after the wait (renew.sql), and fails. Callers hold the slot's lock.
CREATE OR REPLACE FUNCTION lease.slot_free(account_id text, pool text, occupant text, me text, now_ timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    l lease.session_lease;
BEGIN
    IF occupant IS NULL OR occupant = me THEN
        RETURN true;
    END IF;
    SELECT * INTO l FROM lease.session_lease s
     WHERE s.account_id = slot_free.account_id AND s.session_id = occupant;
    IF NOT FOUND OR (slot_free.pool <> '' AND l.pool <> slot_free.pool) THEN
        RETURN true;
    END IF;
    IF l.expires_at > now_ THEN
        RETURN false;
    END IF;
    PERFORM FROM lease.session_lease s
     WHERE s.account_id = slot_free.account_id AND s.session_id = occupant AND s.expires_at <= now_
       FOR NO KEY UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false; -- a renewal or a takeover holds it: not ours to decide
    END IF;
    UPDATE lease.session_lease s SET expires_at = s.expires_at
     WHERE s.account_id = slot_free.account_id AND s.session_id = occupant;
    RETURN true;
END
$fn$;

-- take_slots takes session_id's slots for a grant in pool at now_, one per
-- limit of account_id that applies (the account's '', and pool's when pool
-- is not ''), and returns them as they were before it took them (each
-- naming its previous occupant), by pool: NULL when no limit applies, an
-- empty array when one of them has no free slot (busy: nothing is taken).
-- The slots it returns are locked and already name session_id, and
-- lease.slots names them ("slot 2, deep-research slot 1") for the grant's
-- event; the caller grants, then calls lease.slots_granted, which gives them
-- back to their occupants when nothing was granted. Every granting path
-- calls it before it writes the lease, only for an account with a limit.
--
-- The caller locks the session's lease row first when it has one, so that
-- once it holds a slot the grant waits for no lock. Per limit, take_slots
-- locks one slot that is free for the session, or finds none: every slot up
-- to the limit is held or locked by another call, or a lowered limit's live
-- runs above it are still running. Free: within the limit, and naming
-- nobody or this session, or, on a read under its lock, a session whose
-- lease is gone, in another pool (a named pool's slot) or expired
-- (lease.slot_free). Slot rows above the limit whose runs ended are
-- deleted. It never waits for a slot's lock, and locks one slot at a time:
-- the one it means to take (a slot that turned out held after its lock
-- stays locked until the call ends, and others skip it, as they would a
-- held one). A common grant costs two statements per limit: the slot's
-- locking read, then one that reads the limit afresh under that lock and
-- writes the slot (unless it names the session already: then it only
-- reads). One function for all of it: a call with its own search_path is
-- set up again in every transaction.
DROP FUNCTION IF EXISTS lease.take_slot(lease.account_limit, text, timestamptz); -- folded in here
DROP FUNCTION IF EXISTS lease.slot_words(lease.limit_slot[]); -- folded in here
CREATE OR REPLACE FUNCTION lease.take_slots(account_id text, session_id text, pool text, now_ timestamptz)
RETURNS lease.limit_slot[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    me text := take_slots.session_id;
    p text;
    s lease.limit_slot; -- the slot as read under its lock: its occupant before this call
    taken lease.limit_slot[];
    words text;
    tried integer[] := '{}';
    cur integer;
    above boolean;
    live boolean; -- the occupant's lease under the slot's lock: unexpired, expired, NULL none that counts
BEGIN
    FOREACH p IN ARRAY CASE WHEN coalesce(take_slots.pool, '') = '' THEN '{""}'::text[]
                            ELSE ARRAY['', take_slots.pool] END LOOP
        -- The session's own slot is waited for, never skipped: a grant that
        -- holds its lock is deciding whether it is free. Skipped, this grant
        -- would take another slot and, if it committed first, the other one
        -- would find the session live and give the slot back to it: two
        -- slots naming one run, the account a slot short while it lives.
        -- (The other grant waits for no lock of this one's: it skips what is
        -- locked, and slot_free skips a locked lease.)
        PERFORM FROM lease.limit_slot t
         WHERE t.account_id = take_slots.account_id AND t.pool = p AND t.session_id = me
         ORDER BY t.slot
           FOR UPDATE;
        LOOP
            -- A slot that looks free on this statement's snapshot, locked,
            -- the session's own first. The limit is not read here: the read
            -- under the lock below decides on it.
            SELECT * INTO s FROM lease.limit_slot t
             WHERE t.account_id = take_slots.account_id AND t.pool = p AND t.slot <> ALL (tried)
               AND (t.session_id IS NULL OR t.session_id = me OR NOT EXISTS (
                    SELECT FROM lease.session_lease l
                     WHERE l.account_id = t.account_id AND l.session_id = t.session_id
                       AND l.expires_at > now_ AND (t.pool = '' OR l.pool = t.pool)))
             ORDER BY t.session_id IS NOT DISTINCT FROM me DESC, t.slot
             LIMIT 1
               FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                IF NOT EXISTS (SELECT FROM lease.account_limit a
                                WHERE a.account_id = take_slots.account_id AND a.pool = p) THEN
                    EXIT; -- no limit for this pool
                END IF;
                PERFORM lease.slots_granted(taken, me, false); -- the slots of the pools before go back
                RETURN '{}';
            END IF;
            -- Under the slot's lock, on a fresh read (a statement of its own:
            -- its snapshot is taken after the lock): the limit (a set_limit
            -- that committed before this lock is seen here; one after it
            -- waits for this transaction, it locks every slot), whether a
            -- lowered one left rows above it, and another occupant's lease.
            -- A slot that does not name the session is written in the same
            -- statement; it goes back below if it turns out not to be free.
            IF s.session_id IS DISTINCT FROM me THEN
                UPDATE lease.limit_slot t SET session_id = me
                  FROM lease.account_limit a
                 WHERE t.account_id = s.account_id AND t.pool = s.pool AND t.slot = s.slot
                   AND a.account_id = t.account_id AND a.pool = t.pool
                RETURNING a.slots,
                          EXISTS (SELECT FROM lease.limit_slot u
                                   WHERE u.account_id = a.account_id AND u.pool = a.pool AND u.slot > a.slots),
                          (SELECT l.expires_at > now_ FROM lease.session_lease l
                            WHERE l.account_id = a.account_id AND l.session_id = s.session_id
                              AND (a.pool = '' OR l.pool = a.pool))
                     INTO cur, above, live;
            ELSE
                SELECT a.slots,
                       EXISTS (SELECT FROM lease.limit_slot u
                                WHERE u.account_id = a.account_id AND u.pool = a.pool AND u.slot > a.slots),
                       NULL::boolean
                  INTO cur, above, live
                  FROM lease.account_limit a
                 WHERE a.account_id = take_slots.account_id AND a.pool = p;
            END IF;
            IF cur IS NULL THEN -- the limit is gone: as before, this grant is refused
                PERFORM lease.slots_granted(coalesce(taken, '{}') || s, me, false);
                RETURN '{}';
            END IF;
            -- A slot above the limit (a lowered limit's) is not taken.
            -- Another session's slot is free when its lease is gone or in
            -- another pool (live NULL), or expired (slot_free locks and
            -- writes it). Not free: it goes back to its occupant and stays
            -- locked, and the next one is tried.
            IF s.slot > cur OR live
               OR (live IS NOT NULL AND NOT lease.slot_free(take_slots.account_id, p, s.session_id, me, now_)) THEN
                IF s.session_id IS DISTINCT FROM me THEN
                    UPDATE lease.limit_slot t SET session_id = s.session_id
                     WHERE t.account_id = s.account_id AND t.pool = s.pool AND t.slot = s.slot;
                END IF;
                tried := tried || s.slot;
                CONTINUE;
            END IF;
            IF above THEN
                -- A lowered limit: its live runs above it keep the account busy until
                -- they end; the rows of ended ones go. The session's own row
                -- among them too, and only the same way (slot_free with no
                -- me): this call may yet grant nothing (another run holds
                -- the session, or a retry by its holder), and a deleted row
                -- does not come back when slots_granted gives the slots back.
                -- Taken as free, the own row of a session held by a live run
                -- went, and that run held no slot: one more live run than
                -- the limit (found by a stress test that moves the limit).
                DELETE FROM lease.limit_slot t
                 WHERE (t.account_id, t.pool, t.slot) IN (
                       SELECT u.account_id, u.pool, u.slot FROM lease.limit_slot u
                        WHERE u.account_id = take_slots.account_id AND u.pool = p AND u.slot > cur
                          FOR UPDATE SKIP LOCKED)
                   AND lease.slot_free(take_slots.account_id, p, t.session_id, NULL, now_);
                IF EXISTS (SELECT FROM lease.limit_slot t
                            WHERE t.account_id = take_slots.account_id AND t.pool = p AND t.slot > cur) THEN
                    PERFORM lease.slots_granted(coalesce(taken, '{}') || s, me, false);
                    RETURN '{}';
                END IF;
            END IF;
            taken := coalesce(taken, '{}') || s;
            words := coalesce(words || ', ', '') || CASE WHEN p = '' THEN '' ELSE p || ' ' END || 'slot ' || s.slot;
            EXIT;
        END LOOP;
    END LOOP;
    IF words IS NOT NULL AND set_config('lease.slots', words, true) IS NULL THEN
        NULL; -- an expression, not a PERFORM: no executor
    END IF;
    RETURN taken;
END
$fn$;

-- slots_granted ends a grant's take_slots: when nothing was granted, the
-- slots take_slots took go back to the occupants they named before (each
-- one UPDATE by its primary key, only for a slot it wrote); either way the
-- next event names no slot. Returns granted. A no-op for slots NULL (no
-- limit). A grant that went through needs no call: it clears lease.slots
-- itself (lease.acquire).
DROP FUNCTION IF EXISTS lease.hold_slots(lease.limit_slot[], text); -- folded in here
CREATE OR REPLACE FUNCTION lease.slots_granted(slots lease.limit_slot[], session_id text, granted boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    s lease.limit_slot;
BEGIN
    IF slots IS NULL THEN
        RETURN granted;
    END IF;
    IF set_config('lease.slots', '', true) IS NULL THEN NULL; END IF; -- named in the grant's event only
    IF NOT granted THEN
        FOREACH s IN ARRAY slots LOOP
            IF s.session_id IS DISTINCT FROM slots_granted.session_id THEN -- take_slots wrote it
                UPDATE lease.limit_slot t SET session_id = s.session_id
                 WHERE t.account_id = s.account_id AND t.pool = s.pool AND t.slot = s.slot
                   AND t.session_id IS DISTINCT FROM s.session_id;
            END IF;
        END LOOP;
    END IF;
    RETURN granted;
END
$fn$;

-- limit_refused records that run pub was refused a grant of the session
-- because its account or pool is at its limit: a limit_refused event, once
-- per run and session (bounded by the key's last 1000 events, as
-- record_zombie is), notified. Returns whether it recorded one.
CREATE OR REPLACE FUNCTION lease.limit_refused(account_id text, session_id text, pub uuid, pool text,
                                               holder text, now_ timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    ev lease.event;
BEGIN
    IF EXISTS (
        SELECT 1
          FROM (SELECT e.kind, e.run_id FROM lease.event e
                 WHERE e.account_id = limit_refused.account_id AND e.session_id = limit_refused.session_id
                 ORDER BY e.id DESC LIMIT 1000) h
         WHERE h.kind = 'limit_refused' AND h.run_id = pub) THEN
        RETURN false;
    END IF;
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, holder, reason)
    VALUES (now_, 'limit_refused', limit_refused.account_id, limit_refused.session_id, pub,
            coalesce(limit_refused.holder, ''),
            CASE WHEN limit_refused.pool = '' THEN 'account at its limit'
                 ELSE 'account or pool ' || limit_refused.pool || ' at its limit' END)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
    RETURN true;
END
$fn$;

-- limit_event records a limit_set or limit_removed event for account_id's
-- pool (session_id '', the pool and slots in reason), with the caller's
-- login as actor, notified.
CREATE OR REPLACE FUNCTION lease.limit_event(kind text, account_id text, pool text, slots integer, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    ev lease.event;
BEGIN
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind, account_id, session_id, reason)
    VALUES (now_, limit_event.kind, limit_event.account_id, '',
            CASE WHEN limit_event.pool = '' THEN '' ELSE 'pool ' || limit_event.pool || ': ' END ||
            CASE WHEN limit_event.slots IS NULL THEN 'no limit'
                 WHEN limit_event.slots = 1 THEN '1 slot'
                 ELSE limit_event.slots || ' slots' END)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
END
$fn$;

-- set_limit makes account_id's limit (pool '': the whole account; a pool
-- name: runs declared in that pool) slots live runs, and returns how many
-- live runs hold its slots. lease_admin only; recorded as limit_set.
--
-- The live runs the limit covers hold slots from now on, oldest first; a
-- limit lower than the live runs revokes none of them: the account grants
-- nothing more until fewer than slots are live (their slots above the limit
-- go as they end). It locks every slot of the limit first, so grants that
-- took one before finish first, and grants after see the new limit.
CREATE OR REPLACE FUNCTION lease.set_limit(account_id text, pool text, slots integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz;
    held text[];
    s record;
    n integer := 0;
BEGIN
    PERFORM lease.check_key(set_limit.account_id, 'x');
    PERFORM lease.check_pool(set_limit.pool);
    IF set_limit.slots IS NULL OR set_limit.slots < 0 OR set_limit.slots > 100000 THEN
        RAISE EXCEPTION 'invalid slots: a limit is 0 to 100000 runs' USING ERRCODE = '22023';
    END IF;
    INSERT INTO lease.account_limit AS a (account_id, pool, slots, set_at, set_by)
    VALUES (set_limit.account_id, set_limit.pool, set_limit.slots, clock_timestamp(), session_user)
    ON CONFLICT (account_id, pool) DO UPDATE SET slots = EXCLUDED.slots, set_at = EXCLUDED.set_at, set_by = EXCLUDED.set_by;
    PERFORM FROM lease.limit_slot t
     WHERE t.account_id = set_limit.account_id AND t.pool = set_limit.pool
     ORDER BY t.slot FOR UPDATE;
    now_ := clock_timestamp(); -- decide once every grant that held a slot has finished

    -- The live runs the limit covers, each in one slot: the ones in a slot
    -- keep it, the others (acquired before the limit) take a free one.
    SELECT array_agg(l.session_id ORDER BY l.acquired_at, l.session_id) INTO held
      FROM lease.session_lease l
     WHERE l.account_id = set_limit.account_id AND l.expires_at > now_
       AND (set_limit.pool = '' OR l.pool = set_limit.pool);
    UPDATE lease.limit_slot t SET session_id = NULL
     WHERE t.account_id = set_limit.account_id AND t.pool = set_limit.pool
       AND (t.session_id IS NULL OR NOT t.session_id = ANY (coalesce(held, '{}'))
            OR t.slot <> (SELECT min(u.slot) FROM lease.limit_slot u
                           WHERE u.account_id = t.account_id AND u.pool = t.pool AND u.session_id = t.session_id));
    FOR s IN SELECT h.sid FROM unnest(coalesce(held, '{}')) WITH ORDINALITY h(sid, k)
              WHERE NOT EXISTS (SELECT FROM lease.limit_slot t
                                 WHERE t.account_id = set_limit.account_id AND t.pool = set_limit.pool
                                   AND t.session_id = h.sid)
              ORDER BY h.k LOOP
        UPDATE lease.limit_slot t SET session_id = s.sid
         WHERE (t.account_id, t.pool, t.slot) = (
               SELECT u.account_id, u.pool, u.slot FROM lease.limit_slot u
                WHERE u.account_id = set_limit.account_id AND u.pool = set_limit.pool
                  AND u.session_id IS NULL AND u.slot <= set_limit.slots
                ORDER BY u.slot LIMIT 1);
        IF NOT FOUND THEN
            -- No free slot within the limit: above it, until the run ends.
            INSERT INTO lease.limit_slot (account_id, pool, slot, session_id)
            SELECT set_limit.account_id, set_limit.pool,
                   greatest(set_limit.slots, coalesce(max(u.slot), 0)) + 1, s.sid
              FROM lease.limit_slot u
             WHERE u.account_id = set_limit.account_id AND u.pool = set_limit.pool;
        END IF;
        n := n + 1;
    END LOOP;
    -- Free rows above the limit go; rows up to it exist.
    DELETE FROM lease.limit_slot t
     WHERE t.account_id = set_limit.account_id AND t.pool = set_limit.pool
       AND t.slot > set_limit.slots AND t.session_id IS NULL;
    INSERT INTO lease.limit_slot (account_id, pool, slot)
    SELECT set_limit.account_id, set_limit.pool, k FROM generate_series(1, set_limit.slots) k
    ON CONFLICT (account_id, pool, slot) DO NOTHING;
    PERFORM lease.limit_event('limit_set', set_limit.account_id, set_limit.pool, set_limit.slots, now_);
    RETURN coalesce(array_length(held, 1), 0);
END
$fn$;

-- remove_limit removes account_id's limit for pool ('' the account's own)
-- and its slots, and returns whether there was one. lease_admin only;
-- recorded as limit_removed.
CREATE OR REPLACE FUNCTION lease.remove_limit(account_id text, pool text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM lease.check_key(remove_limit.account_id, 'x');
    PERFORM lease.check_pool(remove_limit.pool);
    DELETE FROM lease.account_limit a WHERE a.account_id = remove_limit.account_id AND a.pool = remove_limit.pool;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM lease.limit_slot t WHERE t.account_id = remove_limit.account_id AND t.pool = remove_limit.pool;
    PERFORM lease.limit_event('limit_removed', remove_limit.account_id, remove_limit.pool, NULL, clock_timestamp());
    RETURN true;
END
$fn$;

-- claim_slots, the session's row lock and take_slots' call, is folded into
-- take_slots (lease.acquire calls limit_refused itself): one call less.
DROP FUNCTION IF EXISTS lease.claim_slots(text, text, uuid, text, text, timestamptz);
