-- leasetop: letting a lease go: the holder's release and the operator's
-- forced release, each a DELETE that the trigger records (triggers.sql).

-- release deletes run_id's lease and returns true, or returns false and deletes
-- nothing when run_id does not hold the row (the normal, idempotent outcome of a
-- late or repeated release). It clears the labels force_release sets for the
-- DELETE trigger first: a caller may have set them itself (SET lease.op, or
-- PGOPTIONS), and its own release must never be recorded as a forced one.
CREATE OR REPLACE FUNCTION lease.release(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
BEGIN
    IF NOT coalesce(lease.key_ok(release.account_id, release.session_id), false) THEN
        PERFORM lease.check_key(release.account_id, release.session_id); -- raises the precise error
    END IF;
    PERFORM set_config('lease.op', '', true);
    PERFORM set_config('lease.reason', '', true);
    DELETE FROM lease.session_lease l
     WHERE l.account_id = release.account_id
       AND l.session_id = release.session_id
       AND l.run_id = lease.public_run_id(release.run_id);
    RETURN FOUND;
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
