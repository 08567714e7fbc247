-- leasetop: letting a lease go: the holder's release, which writes its
-- released event itself, and the operator's forced release, a DELETE that
-- the trigger records (triggers.sql).

-- release deletes run_id's lease, writes its released event and returns
-- true, or returns false and deletes nothing when run_id does not hold the
-- row (the normal, idempotent outcome of a late or repeated release). It
-- sets lease.op to 'release' before its DELETE, so the trigger leaves the
-- event to it (triggers.sql); that also replaces a label force_release sets,
-- which a caller may have set itself (SET lease.op, or PGOPTIONS): its own
-- release is never recorded as a forced one.
CREATE OR REPLACE FUNCTION lease.release(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    digest bytea;
    old lease.session_lease;
    ev lease.event;
BEGIN
    IF NOT coalesce(lease.key_ok(release.account_id, release.session_id), false) THEN
        PERFORM lease.check_key(release.account_id, release.session_id); -- raises the precise error
    END IF;
    IF set_config('lease.op', 'release', true) IS NULL THEN NULL; END IF; -- an expression, not a PERFORM: no executor
    digest := sha256(uuid_send(release.run_id)); -- once: see lease.public_run_id_of
    DELETE FROM lease.session_lease l
     WHERE l.account_id = release.account_id
       AND l.session_id = release.session_id
       AND l.run_id = lease.public_run_id_of(digest)
    RETURNING l.* INTO old;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- The event, stamped after the DELETE as the trigger stamps a delete
    -- (higher_fences relies on it).
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
    VALUES (clock_timestamp(), 'released', old.account_id, old.session_id, old.run_id,
            old.fence, old.expires_at, old.holder)
    RETURNING * INTO ev;
    IF lease.notify_or_keep(ev) THEN NULL; END IF;
    RETURN true;
END
$fn$;

-- force_release is the operator's compare-and-release: it deletes the lease only
-- if its holder is still run_id (NULL: whoever holds it) and records the login
-- role and reason in a force_released event. run_id is the *public* run id, the
-- one the table and the monitor show: an operator never knows a run's secret.
CREATE OR REPLACE FUNCTION lease.force_release(account_id text, session_id text, run_id uuid, reason text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    deleted boolean;
BEGIN
    PERFORM lease.check_key(force_release.account_id, force_release.session_id);
    PERFORM lease.check_label('reason', force_release.reason, 512);
    -- Labels the DELETE for the trigger, right before it; the actor is always
    -- session_user. release clears the labels, and no other DELETE is open to
    -- a caller, so only this function's DELETE is recorded as forced.
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
