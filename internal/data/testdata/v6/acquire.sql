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
-- an unexpired lease.
CREATE OR REPLACE FUNCTION lease.acquire(
    account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS SETOF lease.grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
SET plan_cache_mode = 'force_generic_plan' -- the fence-race read prunes at execution: see higher_fences
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    granted lease.grant;
    inserted boolean;
    latest timestamptz; -- the latest expiry among the session's tickets, NULL when it has none
    checked timestamptz;
BEGIN
    -- Valid input passes one expression (grant_ok, inlined); only invalid
    -- input calls refuse_grant, which raises the precise error.
    IF NOT coalesce(lease.grant_ok(acquire.account_id, acquire.session_id, acquire.run_id,
                                   acquire.ttl, acquire.holder, now_), false) THEN
        PERFORM lease.refuse_grant(acquire.account_id, acquire.session_id, acquire.run_id,
                                   acquire.ttl, acquire.holder, now_);
    END IF;
    pub := lease.public_run_id(acquire.run_id);

    -- The common refusal is a read: a lease held by another run, or this run's
    -- own unexpired lease (a retry), answers without a row lock or any WAL. A stale read only sends the call on to the UPSERT below,
    -- which decides under the row lock.
    SELECT l.run_id, l.fence, l.expires_at INTO granted
      FROM lease.session_lease l
     WHERE l.account_id = acquire.account_id AND l.session_id = acquire.session_id;
    IF FOUND AND granted.expires_at > now_ THEN
        IF granted.run_id = pub THEN
            granted.run_id := acquire.run_id;
            RETURN NEXT granted;
        END IF;
        RETURN;
    END IF;

    -- The queue (queue.sql): while the session has a live ticket, only the
    -- head ticket's run may take the free lease; anyone else is refused as
    -- if it were held. A grant to a session with any ticket, live or
    -- expired, ends the grantee's and the expired ones (queue_granted). A
    -- session without a queue pays one probe of an empty range of
    -- queue_ticket's primary key.
    SELECT max(q.expires_at) INTO latest FROM lease.queue_ticket q
     WHERE q.account_id = acquire.account_id AND q.session_id = acquire.session_id;
    IF coalesce(latest > now_, false) -- no ticket: false, not NULL, so queue_admits is not called
       AND NOT lease.queue_admits(acquire.account_id, acquire.session_id, pub, now_) THEN
        RETURN;
    END IF;

    IF lease.follow_failover() THEN NULL; END IF; -- before the fence and the event: see follow_failover
    INSERT INTO lease.session_lease AS l
        (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
    VALUES (acquire.account_id, acquire.session_id, pub, coalesce(acquire.holder, ''),
            nextval('lease.fence_seq'), now_, now_, now_ + acquire.ttl)
    ON CONFLICT (account_id, session_id) DO UPDATE
        SET run_id      = EXCLUDED.run_id,
            holder      = EXCLUDED.holder,
            fence       = nextval('lease.fence_seq'), -- drawn after the row lock: rises in takeover order
            acquired_at = EXCLUDED.acquired_at,
            renewed_at  = EXCLUDED.renewed_at,
            expires_at  = EXCLUDED.expires_at,
            -- the previous holder's options (preempt.sql) are not the new one's
            preemptible = true,
            attachment  = NULL
        WHERE l.expires_at <= EXCLUDED.acquired_at
    RETURNING l.run_id, l.fence, l.expires_at, l.xmax = 0
         INTO granted.run_id, granted.fence, granted.expires_at, inserted;

    IF FOUND THEN
        -- Only an INSERT drew its fence before it knew the key was free (a
        -- row that was inserted has no xmax; a takeover's new version carries
        -- its row lock): see higher_fences.
        IF inserted AND lease.fence_overtaken(granted.fence) THEN
            checked := clock_timestamp(); -- the race ended before now: see higher_fences
            IF EXISTS (SELECT FROM lease.higher_fences(acquire.account_id, acquire.session_id, granted.fence, now_, checked)) THEN
                RAISE EXCEPTION 'another run acquired and released %/% while this acquire drew its fence; retry',
                    acquire.account_id, acquire.session_id USING ERRCODE = '40001';
            END IF;
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
