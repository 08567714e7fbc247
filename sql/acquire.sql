-- acquire grants the session to run_id for ttl, in one conditional UPSERT. The
-- row records lease.public_run_id(run_id); run_id itself stays the caller's.
--
-- Fences rise strictly per key, across deletes too. A takeover draws its fence
-- under the row lock. A fresh INSERT draws it in VALUES, before the insert, so
-- another run could acquire and release the same key in between and leave a
-- higher fence behind; acquire then finds that fence in the key's latest
-- ownership events and raises SQLSTATE 40001 (serialization_failure): nothing
-- was granted, retry. (No lock serialises acquires of a key: an advisory lock
-- did before, and any role that may connect could take it first and block the
-- key, issue 17.)
--
-- Returns one row, with the caller's own run_id, when run_id holds the lease
-- afterwards: a fresh grant, a takeover of an expired lease (new fence), or,
-- when run_id already holds an unexpired lease, that same lease unchanged (a
-- retried call whose reply was lost). Returns zero rows when another run holds
-- an unexpired lease, or when the account or the run's pool is at its limit
-- (limits.sql; the run declares its pool and priority here), or its free
-- slots go to runs queued for them before it (queue.sql, the account's
-- queue).
DROP FUNCTION IF EXISTS lease.acquire(text, text, uuid, interval, text); -- version 6's: now the defaults below
CREATE OR REPLACE FUNCTION lease.acquire(
    account_id text, session_id text, run_id uuid, ttl interval, holder text,
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
    digest bytea;
    pub uuid;
    granted lease.grant;
    inserted boolean;
    got boolean;
    latest timestamptz; -- the latest expiry among the session's tickets, NULL when it has none
    ev lease.event;
    slots lease.limit_slot[]; -- the slots this grant takes (limits.sql), NULL without a limit
BEGIN
    -- Valid input passes one expression (grant_ok, inlined); only invalid
    -- input calls refuse_grant, which raises the precise error.
    IF NOT coalesce(lease.grant_ok(acquire.account_id, acquire.session_id, acquire.run_id,
                                   acquire.ttl, acquire.holder, now_), false) THEN
        PERFORM lease.refuse_grant(acquire.account_id, acquire.session_id, acquire.run_id,
                                   acquire.ttl, acquire.holder, now_);
    END IF;
    digest := sha256(uuid_send(acquire.run_id)); -- once: lease.public_run_id hashes three times
    pub := lease.public_run_id_of(digest);

    -- One read answers the common refusal and the queue's question. A lease
    -- held by another run, or this run's own unexpired lease (a retry), is
    -- refused without a row lock or any WAL; a stale read only sends the
    -- call on to the UPSERT below, which decides under the row lock. The
    -- queue (queue.sql): while the session has a live ticket, only the head
    -- ticket's run may take the free lease; anyone else is refused as if it
    -- were held. A grant to a session with any ticket, live or expired, ends
    -- the grantee's and the expired ones (queue_granted). A session without
    -- a queue pays one probe of an empty range of queue_ticket's primary key.
    SELECT l.run_id, l.fence, l.expires_at,
           (SELECT max(q.expires_at) FROM lease.queue_ticket q
             WHERE q.account_id = acquire.account_id AND q.session_id = acquire.session_id)
      INTO granted.run_id, granted.fence, granted.expires_at, latest
      FROM (VALUES (true)) k LEFT JOIN lease.session_lease l
        ON l.account_id = acquire.account_id AND l.session_id = acquire.session_id;
    IF granted.expires_at > now_ THEN -- NULL when the key has no row
        IF granted.run_id = pub THEN
            granted.run_id := acquire.run_id;
            RETURN NEXT granted;
        END IF;
        RETURN;
    END IF;
    IF coalesce(latest > now_, false) -- no ticket: false, not NULL, so queue_admits is not called
       AND NOT lease.queue_admits(acquire.account_id, acquire.session_id, pub, now_) THEN
        RETURN;
    END IF;

    -- Limits (limits.sql): an account without one pays this one probe of
    -- an empty range of account_limit's primary key.
    IF acquire.pool IS DISTINCT FROM '' THEN
        PERFORM lease.check_pool(acquire.pool);
    END IF;
    IF EXISTS (SELECT FROM lease.account_limit a WHERE a.account_id = acquire.account_id) THEN
        -- The account's queue (queue.sql): while runs wait for its slots, a
        -- free slot goes to them first, oldest first. A limited account
        -- without a waiter pays one probe of an empty index range.
        IF EXISTS (SELECT FROM lease.queue_ticket q
                    WHERE q.account_id = acquire.account_id AND q.pool = coalesce(acquire.pool, '') AND q.for_slot
                      AND q.expires_at > now_ AND q.run_id <> pub)
           AND NOT lease.slot_gate_admits(acquire.account_id, acquire.session_id, pub, coalesce(acquire.pool, ''), now_) THEN
            slots := '{}';
        ELSE
            -- The session's expired lease row, when the read above saw one,
            -- is locked first, so that a grant that holds slots waits for no
            -- lock (a row that appeared since is another run's live lease:
            -- the INSERT grants nothing). Then the slots, written already;
            -- the slots_granted below gives them back if nothing is granted.
            IF granted.fence IS NOT NULL THEN
                PERFORM FROM lease.session_lease l
                 WHERE l.account_id = acquire.account_id AND l.session_id = acquire.session_id
                   FOR UPDATE;
            END IF;
            slots := lease.take_slots(acquire.account_id, acquire.session_id, acquire.pool, now_);
        END IF;
        IF slots = '{}' THEN
            PERFORM lease.limit_refused(acquire.account_id, acquire.session_id, pub, acquire.pool, acquire.holder, now_);
            IF latest IS NOT NULL THEN
                -- A queued run keeps its place in the account's queue.
                PERFORM lease.slot_wait(acquire.account_id, acquire.session_id, pub, acquire.pool, now_);
            END IF;
            RETURN; -- at its limit: busy, as a held session is
        END IF;
        -- The grant starts once its slots are its own: after the commits
        -- that freed them, and after any wait for the session's row lock.
        now_ := clock_timestamp();
    END IF;

    IF lease.follow_failover() THEN NULL; END IF; -- before the fence and the event: see follow_failover
    -- This call writes its INSERT's event itself, below; the trigger leaves
    -- it alone when lease.op says 'acquire' (triggers.sql) and records a
    -- takeover's UPDATE, whose previous holder only it sees.
    IF set_config('lease.op', 'acquire', true) IS NULL THEN NULL; END IF;
    -- Without a limit the grant names no slots, whatever a caller set.
    IF slots IS NULL AND set_config('lease.slots', '', true) IS NULL THEN NULL; END IF;
    INSERT INTO lease.session_lease AS l
        (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at, pool, priority)
    VALUES (acquire.account_id, acquire.session_id, pub, coalesce(acquire.holder, ''),
            nextval('lease.fence_seq'), now_, now_, now_ + acquire.ttl,
            coalesce(acquire.pool, ''), coalesce(acquire.priority, 0))
    ON CONFLICT (account_id, session_id) DO UPDATE
        SET run_id      = EXCLUDED.run_id,
            holder      = EXCLUDED.holder,
            fence       = nextval('lease.fence_seq'), -- drawn after the row lock: rises in takeover order
            acquired_at = EXCLUDED.acquired_at,
            renewed_at  = EXCLUDED.renewed_at,
            expires_at  = EXCLUDED.expires_at,
            -- the previous holder's options (preempt.sql) are not the new one's
            preemptible = true,
            attachment  = NULL,
            pool        = EXCLUDED.pool,
            priority    = EXCLUDED.priority
        WHERE l.expires_at <= EXCLUDED.acquired_at
    RETURNING l.run_id, l.fence, l.expires_at, l.xmax = 0
         INTO granted.run_id, granted.fence, granted.expires_at, inserted;
    got := FOUND;
    IF got AND inserted THEN
        -- The grant's event, in this transaction, as the trigger writes it
        -- (a limited account's slots in its reason): written here, it costs
        -- no queued trigger and no call.
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason)
        VALUES (now_, 'acquired', acquire.account_id, acquire.session_id, pub,
                granted.fence, granted.expires_at, coalesce(acquire.holder, ''),
                nullif(current_setting('lease.slots', true), ''))
        RETURNING * INTO ev;
        IF lease.notify_or_keep(ev) THEN NULL; END IF;
    END IF;
    -- A limit's slots (limits.sql): granted, they name no slot in the next
    -- event; not granted, they go back (slots_granted), a rare call.
    IF slots IS NULL THEN
        NULL;
    ELSIF got THEN
        IF set_config('lease.slots', '', true) IS NULL THEN NULL; END IF;
    ELSIF lease.slots_granted(slots, acquire.session_id, false) THEN
        NULL;
    END IF;

    IF got THEN
        -- Only an INSERT drew its fence before it knew the key was free (a
        -- row that was inserted has no xmax; a takeover's new version carries
        -- its row lock): see higher_fences.
        IF inserted AND lease.fence_overtaken(granted.fence) THEN
            PERFORM lease.check_fence_race('acquire', acquire.account_id, acquire.session_id, granted.fence, now_);
        END IF;
        IF latest IS NOT NULL THEN
            PERFORM lease.queue_granted(acquire.account_id, acquire.session_id, pub, now_); -- ends its ticket
        END IF;
        granted.run_id := acquire.run_id;
        RETURN NEXT granted;
        RETURN;
    END IF;

    -- Contended, or a retry by the run that already holds it: the existing grant, unchanged.
    RETURN QUERY
        SELECT acquire.run_id, l.fence, l.expires_at
          FROM lease.session_lease l
         WHERE l.account_id = acquire.account_id
           AND l.session_id = acquire.session_id
           AND l.run_id = pub
           AND l.expires_at > now_;
END
$fn$;
