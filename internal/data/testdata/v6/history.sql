-- leasetop: the history's rows as notifications carry them, and the
-- retention by age (partition.sql keeps the partitions by day).

-- Version 4 made an older history the first partition of a new lease.event,
-- and the event_json of the old table's row type stayed behind with it:
-- nothing calls it, and it kept that partition from being dropped (issue 37).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p
              WHERE p.pronamespace = 'lease'::regnamespace AND p.proname = 'event_json'
                AND p.proargtypes[0] <> 'lease.event'::regtype LOOP
        EXECUTE format('DROP FUNCTION %s', f);
    END LOOP;
END
$$;

-- event_json is the notification payload for an event row: compact JSON, the
-- row's columns by name in their order, bounded by the column constraints to
-- well under 8000 bytes. PL/pgSQL, not SQL: a SQL function with its own
-- search_path is parsed and planned again on every call (it cost a notifying
-- transition about a quarter of its time); PL/pgSQL keeps its plan for the
-- session. A transition whose caller notifies after its commit gets the
-- same payload, kept in the session by the trigger (row_to_json of the row,
-- without this function; triggers.sql, pending_key).
CREATE OR REPLACE FUNCTION lease.event_json(e lease.event)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    RETURN row_to_json(e)::text;
END
$fn$;

-- prune_events is the retention function: it deletes events older than keep
-- (on the database clock) and returns how many it deleted. Run it from cron,
-- e.g. SELECT lease.prune_events('30 days').
CREATE OR REPLACE FUNCTION lease.prune_events(keep interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
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
