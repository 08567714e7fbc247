-- leasetop: the failover floor. A fence must never repeat, or a resource
-- that accepts fence >= last_fence would accept two owners; an event id names
-- one transition, or a monitor that has seen the id ignores the next
-- transition given it. With
-- asynchronous replication a promoted standby can lack the last commits the
-- old primary acknowledged, and with them the state of fence_seq and of the
-- event ids (a sequence logs 32 values ahead in WAL, and that WAL can be lost
-- too), so its next values could repeat ones already handed out. A promoted
-- standby writes on a new WAL timeline, so on timeline T both sequences are
-- first moved to at least (T - 1) * 2^43: more than any primary of an earlier
-- timeline could hand out (2^43 values each), and nothing moves on timeline
-- 1, where every database starts. They rise across 2^20 failovers before
-- bigint runs out. Every function that draws a fence or inserts into
-- lease.event checks first: IF lease.follow_failover() THEN NULL; END IF;
-- (data's TestEveryEventAndFenceWriterFollowsTheFailoverFloor holds every
-- such function to it).

-- Versions 2 to 5 named these three after the WAL timeline
-- (timeline_floor, move_past_timeline, follow_timeline); "timeline" is the
-- monitor's rewind view now. Granted to nobody, called only by the
-- functions the files recreate.
DROP FUNCTION IF EXISTS lease.follow_timeline();
DROP FUNCTION IF EXISTS lease.move_past_timeline();
DROP FUNCTION IF EXISTS lease.timeline_floor();

-- failover_floor is (T - 1) * 2^43 for the server's WAL timeline T (the
-- first 8 hex digits of a WAL file's name).
CREATE OR REPLACE FUNCTION lease.failover_floor()
RETURNS bigint
LANGUAGE sql VOLATILE
AS $fn$
    SELECT ((('x' OPERATOR(pg_catalog.||)
              pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::pg_catalog.bit(32)::pg_catalog.int8)
            OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.*) 8796093022208
$fn$;

-- move_past_failover moves fence_seq and the event ids to failover_floor(),
-- on the first write on a new timeline, and reports true. The first writer
-- moves them holding lease.schema_version's row (written only by migrate), so
-- that two cannot interleave their setval calls (one could set a sequence
-- back below a value the other had drawn); a concurrent one does not wait
-- for it (a release holding a lease row could deadlock with an acquire) but
-- raises SQLSTATE 40001, to retry.
CREATE OR REPLACE FUNCTION lease.move_past_failover()
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    floor_ bigint := lease.failover_floor();
BEGIN
    BEGIN
        PERFORM FROM lease.schema_version FOR UPDATE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION 'the first write on a new timeline is in progress; retry' USING ERRCODE = '40001';
    END;
    IF coalesce(pg_sequence_last_value('lease.event_id_seq'), 0) < floor_ THEN
        PERFORM setval('lease.event_id_seq', greatest(nextval('lease.event_id_seq'), floor_));
    END IF;
    IF coalesce(pg_sequence_last_value('lease.fence_seq'), 0) < floor_ THEN
        PERFORM setval('lease.fence_seq', greatest(nextval('lease.fence_seq'), floor_));
    END IF;
    RETURN true;
END
$fn$;

-- follow_failover is the check: false unless it had to move the sequences.
-- A plain SQL function that its callers inline, it reads the timeline and
-- the two sequences' last values and no table: about 1 us. It has no SET
-- clause, which would stop the inlining, so every name in it is qualified
-- (its callers pin their search_path anyway). Call it in an IF, not with
-- PERFORM: a plain expression skips the executor (5 us less).
CREATE OR REPLACE FUNCTION lease.follow_failover()
RETURNS boolean
LANGUAGE sql VOLATILE
AS $fn$
    SELECT CASE
        WHEN pg_catalog.pg_is_in_recovery() THEN false -- a standby: the write that follows fails as read-only (25006)
        WHEN LEAST(COALESCE(pg_catalog.pg_sequence_last_value('lease.fence_seq'), 0),
                   COALESCE(pg_catalog.pg_sequence_last_value('lease.event_id_seq'), 0))
             OPERATOR(pg_catalog.>=) lease.failover_floor() THEN false
        ELSE lease.move_past_failover()
    END
$fn$;
