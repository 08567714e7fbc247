-- leasetop: keeping a lease. A renewal extends the run's own unexpired
-- lease and never revives an expired or taken-over one; a rejected renewal
-- by a run that held the key is a zombie, recorded once per grant it meets.

-- record_zombie is the zombie rule of lease.renew and lease.renew_many: a
-- rejected renewal of the key by the run whose public id is pub, where cur
-- is the key's row as the call read it (NULL: no lease), is recorded as a
-- renew_rejected event, with the public run id, and notified, if the run
-- held this key: its own expired lease, or the run in one of the key's last
-- 1000 events (event_session_idx, newest first, bounded). Any other
-- rejected renewal writes nothing, so a caller renewing random keys or run
-- ids cannot flood the history and the notifications, nor fake zombies on
-- real sessions. A run's rejection is recorded once per grant it meets on
-- the key (cur's fence; one for no lease): a zombie that keeps renewing
-- writes again only when the key changed hands, not on every call (issue
-- 37). Returns whether it recorded one.
CREATE OR REPLACE FUNCTION lease.record_zombie(account_id text, session_id text, pub uuid,
                                               cur lease.session_lease, now_ timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    ev lease.event;
BEGIN
    IF cur.run_id IS DISTINCT FROM pub AND NOT EXISTS (
        SELECT 1
          FROM (SELECT e.run_id, e.prev_run_id FROM lease.event e
                 WHERE e.account_id = record_zombie.account_id AND e.session_id = record_zombie.session_id
                 ORDER BY e.id DESC LIMIT 1000) h
         WHERE h.run_id = pub OR h.prev_run_id = pub) THEN
        RETURN false;
    END IF;
    -- Recorded already for this grant: its events since it was granted (or
    -- the key's last 1000 when there is no lease), newest first, bounded.
    IF EXISTS (
        SELECT 1
          FROM (SELECT e.kind, e.run_id, e.fence FROM lease.event e
                 WHERE e.account_id = record_zombie.account_id AND e.session_id = record_zombie.session_id
                   AND e.at >= coalesce(cur.acquired_at, '-infinity'::timestamptz)
                 ORDER BY e.id DESC LIMIT 1000) h
         WHERE h.kind = 'renew_rejected' AND h.run_id = pub AND h.fence IS NOT DISTINCT FROM cur.fence) THEN
        RETURN false;
    END IF;
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason)
    VALUES (now_, 'renew_rejected', record_zombie.account_id, record_zombie.session_id, pub,
            cur.fence, cur.expires_at, cur.holder,
            CASE
                WHEN cur.run_id IS NULL THEN 'no lease'
                WHEN cur.run_id = pub THEN 'lease expired'
                ELSE 'held by run ' || cur.run_id::text
            END)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
    RETURN true;
END
$fn$;

-- renew extends run_id's unexpired lease to now + ttl and returns the new expiry,
-- or returns NULL when run_id no longer holds an unexpired lease. It never
-- revives an expired or taken-over lease.
--
-- A rejected renewal by a run that held this key (its own expired lease, or
-- the run in one of the key's last 1000 events) is a zombie: it is recorded as
-- a renew_rejected event, with the public run id, and notified, once per
-- grant it meets on the key (record_zombie). Any other rejected renewal
-- writes nothing: a caller renewing random keys or run ids cannot flood the
-- history and the notifications, nor fake zombies on real sessions.
CREATE OR REPLACE FUNCTION lease.renew(account_id text, session_id text, run_id uuid, ttl interval)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid := lease.public_run_id(renew.run_id);
    new_expiry timestamptz;
    cur lease.session_lease;
BEGIN
    -- Valid input passes one expression; invalid input gets the precise error.
    IF NOT coalesce(lease.key_ok(renew.account_id, renew.session_id) AND lease.ttl_ok(renew.ttl, now_), false) THEN
        PERFORM lease.check_key(renew.account_id, renew.session_id);
        PERFORM lease.check_ttl_span(renew.ttl, now_);
    END IF;
    IF renew.run_id IS NULL THEN
        RETURN NULL; -- no run: nothing to renew, and no zombie to record (NULL matches no history)
    END IF;

    UPDATE lease.session_lease l
       SET renewed_at = now_, expires_at = now_ + renew.ttl
     WHERE l.account_id = renew.account_id
       AND l.session_id = renew.session_id
       AND l.run_id = pub
       AND l.expires_at > now_
    RETURNING l.expires_at INTO new_expiry;

    IF FOUND THEN
        RETURN new_expiry;
    END IF;

    -- A zombie: this run lost the lease but is still heartbeating (record_zombie).
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = renew.account_id AND l.session_id = renew.session_id;
    PERFORM lease.record_zombie(renew.account_id, renew.session_id, pub, cur, now_);
    RETURN NULL;
END
$fn$;

-- renew_many is lease.renew for many leases in one call, one statement and one
-- transaction: a process that holds many leases keeps them all alive in one
-- round trip. Element k of the three arrays is one renewal (account_ids[k],
-- session_ids[k], run_ids[k]), all for ttl; it returns one row (i = k,
-- expires_at) per renewal decided: the new expiry now + ttl, or NULL when
-- run_ids[k] no longer holds an unexpired lease on that key, exactly as
-- lease.renew decides it (never reviving, and a rejected renewal by a run that
-- held the key is recorded as a renew_rejected event, once per grant it meets
-- there; NULL run ids and runs that never held the key write nothing). Each
-- renewal renews only its own row: a rejected one leaves the others renewed.
--
-- One call records at most 100 rejections (the first ones, in k order, not
-- recorded before): a process holding 10000 leases that all expired while it
-- was frozen wrote 10000 events and notifications on every call (issue 37).
-- The caller learns of every rejection from the result, not from the
-- history; its next calls record the rest, 100 at a time, each once.
--
-- A renewal whose row another transaction has locked (a fenced write's
-- check_fence holds it FOR SHARE until it commits) is skipped, not waited
-- for, so one busy lease cannot hold back the others: its k is missing from
-- the result, nothing was decided for it, and the caller renews it alone with
-- lease.renew, which waits for the lock (data.Store.RenewMany does).
--
-- At most 10000 renewals per call; the arrays must have equal lengths and the
-- keys pass lease.check_key, else SQLSTATE 22023 and nothing is renewed.
-- The plan is pinned to an index nested loop on the primary key at every
-- batch size (the planner's own choice for a custom plan of 1000 keys is a
-- hash join that reads every lease): a generic plan, no hash or merge join.
CREATE OR REPLACE FUNCTION lease.renew_many(account_ids text[], session_ids text[], run_ids uuid[], ttl interval)
RETURNS TABLE(i integer, expires_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET plan_cache_mode = 'force_generic_plan'
SET enable_hashjoin = 'off'
SET enable_mergejoin = 'off'
SET enable_seqscan = 'off'
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    n integer := cardinality(renew_many.account_ids);
    done_i integer[];
    done_exp timestamptz[];
    r record;
    pub uuid;
    cur lease.session_lease;
    recorded integer := 0;
    record_max constant integer := 100; -- rejections recorded per call: see above
BEGIN
    IF n IS NULL OR cardinality(renew_many.session_ids) IS DISTINCT FROM n
       OR cardinality(renew_many.run_ids) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'account_ids, session_ids and run_ids must be arrays of the same length' USING ERRCODE = '22023';
    END IF;
    IF n > 10000 THEN
        RAISE EXCEPTION 'at most 10000 renewals per call, got %', n USING ERRCODE = '22023';
    END IF;
    IF NOT coalesce(lease.ttl_ok(renew_many.ttl, now_), false) THEN
        PERFORM lease.check_ttl_span(renew_many.ttl, now_);
    END IF;
    -- Valid keys pass one expression; the first invalid one gets check_key's precise error.
    SELECT u.a, u.s INTO r
      FROM unnest(renew_many.account_ids, renew_many.session_ids) AS u(a, s)
     WHERE NOT coalesce(lease.key_ok(u.a, u.s), false)
     LIMIT 1;
    IF FOUND THEN
        PERFORM lease.check_key(r.a, r.s);
    END IF;

    -- Lock the rows this call may renew (held by the run, unexpired), skipping
    -- the ones another transaction holds, then renew the locked ones. A key
    -- named twice is renewed once, for one of its k (the other is found below).
    WITH mine AS MATERIALIZED (
        SELECT l.account_id, l.session_id, req.k
          FROM (SELECT u.a, u.s, u.k::integer AS k,
                       -- lease.public_run_id(u.r), spelled out: a call of a
                       -- function with its own search_path per key costs
                       -- the batch 10-15 % of its server CPU (bench keepalive)
                       encode(set_byte(set_byte(x.h, 6, (get_byte(x.h, 6) & 15) | 128),
                                       8, (get_byte(x.h, 8) & 63) | 128), 'hex')::uuid AS pub
                  FROM unnest(renew_many.account_ids, renew_many.session_ids, renew_many.run_ids)
                       WITH ORDINALITY AS u(a, s, r, k)
                 CROSS JOIN LATERAL (SELECT substring(sha256(uuid_send(u.r)) FROM 1 FOR 16) AS h OFFSET 0) x
                 WHERE u.r IS NOT NULL) req
          JOIN lease.session_lease l
            ON l.account_id = req.a AND l.session_id = req.s AND l.run_id = req.pub
         WHERE l.expires_at > now_
           FOR NO KEY UPDATE OF l SKIP LOCKED
    ), renewed AS (
        UPDATE lease.session_lease l
           SET renewed_at = now_, expires_at = now_ + renew_many.ttl
          FROM mine
         WHERE l.account_id = mine.account_id AND l.session_id = mine.session_id
        RETURNING mine.k, l.expires_at
    )
    SELECT coalesce(array_agg(renewed.k), '{}'), coalesce(array_agg(renewed.expires_at), '{}')
      INTO done_i, done_exp
      FROM renewed;

    RETURN QUERY SELECT d.k, d.e FROM unnest(done_i, done_exp) AS d(k, e);
    IF cardinality(done_i) = n THEN
        RETURN; -- the common case: every lease renewed
    END IF;

    -- The rest, one by one, as lease.renew decides a rejection, each with
    -- its key's row read in the same statement (one probe of the primary
    -- key each, not a statement each).
    FOR r IN
        SELECT u.a, u.s, u.r, u.k::integer AS k, l AS row_
          FROM unnest(renew_many.account_ids, renew_many.session_ids, renew_many.run_ids) WITH ORDINALITY AS u(a, s, r, k)
          LEFT JOIN lease.session_lease l ON l.account_id = u.a AND l.session_id = u.s
         WHERE u.k::integer <> ALL (done_i)
         ORDER BY u.k
    LOOP
        i := r.k;
        expires_at := NULL;
        IF r.r IS NULL THEN
            RETURN NEXT; -- no run: nothing to renew, and no zombie to record
            CONTINUE;
        END IF;
        pub := lease.public_run_id(r.r);
        cur := r.row_;
        IF cur.run_id = pub AND cur.renewed_at = now_ THEN
            expires_at := cur.expires_at; -- a key named twice: renewed above, for its other k
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF cur.run_id = pub AND cur.expires_at > now_ THEN
            CONTINUE; -- held, unexpired and locked by another transaction: undecided, left out
        END IF;
        RETURN NEXT;
        IF recorded < record_max THEN
            IF lease.record_zombie(r.a, r.s, pub, cur, now_) THEN
                recorded := recorded + 1;
            END IF;
        END IF;
    END LOOP;
END
$fn$;
