-- leasetop functions: the only write path to lease.session_lease.
--
-- Every function samples clock_timestamp() once and uses that instant for every
-- comparison and timestamp it writes, so one call sees one "now" on the database
-- clock. Functions are SECURITY DEFINER with a pinned search_path; callers need
-- only EXECUTE (see roles.sql). lock_timeout bounds how long a call can wait
-- behind another transaction that holds the row.

-- check_key raises SQLSTATE 22023 unless both ids are 1..512 bytes without
-- control characters.
CREATE OR REPLACE FUNCTION lease.check_key(account_id text, session_id text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease
AS $fn$
BEGIN
    IF account_id IS NULL OR octet_length(account_id) NOT BETWEEN 1 AND 512 THEN
        RAISE EXCEPTION 'account_id must be 1 to 512 bytes' USING ERRCODE = '22023';
    END IF;
    IF session_id IS NULL OR octet_length(session_id) NOT BETWEEN 1 AND 512 THEN
        RAISE EXCEPTION 'session_id must be 1 to 512 bytes' USING ERRCODE = '22023';
    END IF;
    IF account_id ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'account_id must not contain control characters' USING ERRCODE = '22023';
    END IF;
    IF session_id ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'session_id must not contain control characters' USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- check_ttl raises SQLSTATE 22023 unless 0 < ttl <= 24 hours.
CREATE OR REPLACE FUNCTION lease.check_ttl(ttl interval)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease
AS $fn$
BEGIN
    IF ttl IS NULL OR ttl <= interval '0' OR ttl > interval '24 hours' THEN
        RAISE EXCEPTION 'ttl must be greater than 0 and at most 24 hours, got %', coalesce(ttl::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- check_label raises SQLSTATE 22023 unless a holder label or reason is at most
-- max_bytes bytes without control characters.
CREATE OR REPLACE FUNCTION lease.check_label(name text, value text, max_bytes integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease
AS $fn$
BEGIN
    IF octet_length(value) > max_bytes THEN
        RAISE EXCEPTION '% must be at most % bytes', name, max_bytes USING ERRCODE = '22023';
    END IF;
    IF value ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION '% must not contain control characters', name USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- acquire grants the session to run_id for ttl, in one conditional UPSERT.
--
-- Returns one row when run_id holds the lease afterwards: a fresh grant, a
-- takeover of an expired lease (new fence), or, when run_id already holds an
-- unexpired lease, that same lease unchanged (a retried call whose reply was
-- lost). Returns zero rows when another run holds an unexpired lease.
CREATE OR REPLACE FUNCTION lease.acquire(
    account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS SETOF lease.grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    granted lease.grant;
BEGIN
    PERFORM lease.check_key(acquire.account_id, acquire.session_id);
    PERFORM lease.check_ttl(acquire.ttl);
    PERFORM lease.check_label('holder', acquire.holder, 256);
    IF acquire.run_id IS NULL THEN
        RAISE EXCEPTION 'run_id must not be NULL' USING ERRCODE = '22023';
    END IF;

    -- The common refusal is a read: a lease held by another run, or this run's
    -- own unexpired lease (a retry), answers without a row lock, an advisory
    -- lock or any WAL. A stale read only sends the call on to the UPSERT below,
    -- which decides under the row lock.
    SELECT l.run_id, l.fence, l.expires_at INTO granted
      FROM lease.session_lease l
     WHERE l.account_id = acquire.account_id AND l.session_id = acquire.session_id;
    IF FOUND AND granted.expires_at > now_ THEN
        IF granted.run_id = acquire.run_id THEN
            RETURN NEXT granted;
        END IF;
        RETURN;
    END IF;

    -- Serialise acquires of one key until commit, so a fresh INSERT's fence
    -- (drawn in VALUES, before the insert) cannot be overtaken by another run
    -- that acquires and releases the same key in between: fences rise strictly
    -- per key across deletes, too. Two-int form, class 'leas', so it cannot
    -- collide with an application's one-bigint advisory locks.
    PERFORM pg_advisory_xact_lock(1818583411, hashtext(acquire.account_id || '/' || acquire.session_id));

    INSERT INTO lease.session_lease AS l
        (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
    VALUES (acquire.account_id, acquire.session_id, acquire.run_id, coalesce(acquire.holder, ''),
            nextval('lease.fence_seq'), now_, now_, now_ + acquire.ttl)
    ON CONFLICT (account_id, session_id) DO UPDATE
        SET run_id      = EXCLUDED.run_id,
            holder      = EXCLUDED.holder,
            fence       = nextval('lease.fence_seq'), -- drawn after the row lock: rises in takeover order
            acquired_at = EXCLUDED.acquired_at,
            renewed_at  = EXCLUDED.renewed_at,
            expires_at  = EXCLUDED.expires_at
        WHERE l.expires_at <= EXCLUDED.acquired_at
    RETURNING l.run_id, l.fence, l.expires_at INTO granted;

    IF FOUND THEN
        RETURN NEXT granted;
        RETURN;
    END IF;

    -- Contended, or a retry by the run that already holds it: the existing grant, unchanged.
    RETURN QUERY
        SELECT l.run_id, l.fence, l.expires_at
          FROM lease.session_lease l
         WHERE l.account_id = acquire.account_id
           AND l.session_id = acquire.session_id
           AND l.run_id = acquire.run_id
           AND l.expires_at > now_;
END
$fn$;

-- renew extends run_id's unexpired lease to now + ttl and returns the new expiry,
-- or returns NULL and records a renew_rejected event when run_id no longer holds
-- an unexpired lease. It never revives an expired or taken-over lease.
CREATE OR REPLACE FUNCTION lease.renew(account_id text, session_id text, run_id uuid, ttl interval)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    new_expiry timestamptz;
    cur lease.session_lease;
    ev lease.event;
BEGIN
    PERFORM lease.check_key(renew.account_id, renew.session_id);
    PERFORM lease.check_ttl(renew.ttl);

    UPDATE lease.session_lease l
       SET renewed_at = now_, expires_at = now_ + renew.ttl
     WHERE l.account_id = renew.account_id
       AND l.session_id = renew.session_id
       AND l.run_id = renew.run_id
       AND l.expires_at > now_
    RETURNING l.expires_at INTO new_expiry;

    IF FOUND THEN
        RETURN new_expiry;
    END IF;

    -- A zombie: this run lost the lease but is still heartbeating. Record it.
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = renew.account_id AND l.session_id = renew.session_id;

    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason)
    VALUES (now_, 'renew_rejected', renew.account_id, renew.session_id, renew.run_id,
            cur.fence, cur.expires_at, cur.holder,
            CASE
                WHEN cur.run_id IS NULL THEN 'no lease'
                WHEN cur.run_id = renew.run_id THEN 'lease expired'
                ELSE 'held by run ' || cur.run_id::text
            END)
    RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
    RETURN NULL;
END
$fn$;

-- release deletes run_id's lease and returns true, or returns false and deletes
-- nothing when run_id does not hold the row (the normal, idempotent outcome of a
-- late or repeated release).
CREATE OR REPLACE FUNCTION lease.release(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM lease.check_key(release.account_id, release.session_id);
    DELETE FROM lease.session_lease l
     WHERE l.account_id = release.account_id
       AND l.session_id = release.session_id
       AND l.run_id = release.run_id;
    RETURN FOUND;
END
$fn$;

-- force_release is the operator's compare-and-release: it deletes the lease only
-- if its holder is still run_id (NULL: whoever holds it) and records the login
-- role and reason in a force_released event.
CREATE OR REPLACE FUNCTION lease.force_release(account_id text, session_id text, run_id uuid, reason text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
DECLARE
    deleted boolean;
BEGIN
    PERFORM lease.check_key(force_release.account_id, force_release.session_id);
    PERFORM lease.check_label('reason', force_release.reason, 512);
    -- Labels the DELETE for the trigger; the actor is always session_user.
    PERFORM set_config('lease.op', 'force', true);
    PERFORM set_config('lease.reason', coalesce(force_release.reason, ''), true);
    DELETE FROM lease.session_lease l
     WHERE l.account_id = force_release.account_id
       AND l.session_id = force_release.session_id
       AND (force_release.run_id IS NULL OR l.run_id = force_release.run_id);
    deleted := FOUND;
    PERFORM set_config('lease.op', '', true);
    PERFORM set_config('lease.reason', '', true);
    RETURN deleted;
END
$fn$;

-- check_fence is the fence check for a write protected by the lease in the same
-- database. Call it inside the transaction that makes the write: it returns true
-- and locks the lease row FOR SHARE (so no takeover can commit before this
-- transaction ends) when run_id still holds an unexpired lease with this fence;
-- otherwise it returns false and the caller must not write.
CREATE OR REPLACE FUNCTION lease.check_fence(account_id text, session_id text, run_id uuid, fence bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM 1
       FROM lease.session_lease l
      WHERE l.account_id = check_fence.account_id
        AND l.session_id = check_fence.session_id
        AND l.run_id = check_fence.run_id
        AND l.fence = check_fence.fence
        AND l.expires_at > clock_timestamp()
        FOR SHARE;
    RETURN FOUND;
END
$fn$;

-- event_json is the notification payload for an event row: compact JSON,
-- bounded by the column constraints to well under 8000 bytes.
CREATE OR REPLACE FUNCTION lease.event_json(e lease.event)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, lease
AS $fn$
    SELECT json_build_object(
        'id', e.id, 'at', e.at, 'kind', e.kind,
        'account_id', e.account_id, 'session_id', e.session_id,
        'run_id', e.run_id, 'prev_run_id', e.prev_run_id,
        'fence', e.fence, 'prev_fence', e.prev_fence,
        'expires_at', e.expires_at, 'prev_expires_at', e.prev_expires_at,
        'holder', e.holder, 'actor', e.actor, 'reason', e.reason)::text
$fn$;

-- prune_events is the retention function: it deletes events older than keep
-- (on the database clock) and returns how many it deleted. Run it from cron,
-- e.g. SELECT lease.prune_events('30 days').
CREATE OR REPLACE FUNCTION lease.prune_events(keep interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
AS $fn$
DECLARE
    n bigint;
BEGIN
    IF keep IS NULL OR keep < interval '0' THEN
        RAISE EXCEPTION 'keep must be a non-negative interval' USING ERRCODE = '22023';
    END IF;
    DELETE FROM lease.event WHERE at < clock_timestamp() - keep;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$fn$;
