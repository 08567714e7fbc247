-- leasetop: fences. A fence rises strictly per key, across takeovers and
-- deletes, so a resource that accepts fence >= the last it saw never
-- accepts two owners: a grant that UPDATEs a row draws its fence under the
-- row lock, and a grant that INSERTs one checks the race below. check_fence
-- is the check a write protected by the lease makes in its own transaction.

-- higher_fences is the fence-race check of a grant that INSERTed the key's
-- row with a fence drawn before it knew the key was free: the fences above
-- fence among the key's two latest ownership events. Any row means another
-- run acquired and released the key in between, and the caller raises
-- SQLSTATE 40001 (serialization_failure: nothing granted, retry). Whoever
-- held the key before this grant committed its events before the INSERT
-- could succeed, and nobody else can take the key until this transaction
-- ends, so those two events (this grant's and the one before it) show any
-- higher fence. Rejected renewals, the queue's events, the hand-over asks
-- (which carry an older holder's fence) and the inbox's messages (sent at
-- any time, fence or none: inbox.sql) are not ownership events;
-- handed_over is. lease.acquire and lease.preempt (preempt.sql) share it.
--
-- The read is bounded by time, so that PostgreSQL reads only the one or
-- two of lease.event's daily partitions around now instead of probing every
-- day kept. The race it guards is "another run acquired and released the
-- key between this call's fence draw and its INSERT": the other run's fence
-- is higher, so it was drawn after this call's, and the sequence ends with
-- a delete event (released or force_released: the key is free when the
-- INSERT succeeds) that the trigger (triggers.sql) stamps clock_timestamp()
-- after that draw, so after the caller's now_ (sampled before its draw),
-- and before the caller's INSERT, so before the check. That delete event
-- carries the last holder's fence, at least the racing run's (fences rise
-- per key), and it and this grant's own event (at = now_) are the key's two
-- latest ownership events. Every delete is stamped so: release,
-- force_release and the owner's own DELETE all fire that trigger; preempt,
-- hand_over and a takeover of an expired lease UPDATE the row (their events
-- are stamped with their acquired_at) and never free the key, so none of
-- them can end the race. The callers pass since = their now_ and upto =
-- clock_timestamp() at the check, and the read keeps [since - 1 hour,
-- upto + 1 hour]: the hour is the margin for a system clock that steps
-- back (or forth) during the race, far beyond an NTP correction; its cost is
-- a second partition read in the first and last hour of each UTC day.
--
-- The read's plan is the cached generic one, which prunes the partitions
-- when it starts executing (Subplans Removed) and plans nothing per call:
-- its caller, check_fence_race, SETs plan_cache_mode = force_generic_plan. Left to choose,
-- PostgreSQL keeps planning this read for each call's values (the generic
-- plan's estimate for unknown times looks dearer), and planning it, even
-- when it prunes at planning, cost more than the probes of every partition
-- it saves (docs/BENCHMARKS.md, The history partitioned by day). PostgreSQL 15 still
-- locks every partition for a generic plan.
--
-- A set-returning SQL function without a SET clause, so that the callers'
-- EXISTS inlines it: a fresh acquire calls no function for it. Every name in
-- it is qualified.
-- fence_overtaken is the fence-race check's first step, and usually its
-- last: whether any fence was drawn after fence. The race higher_fences
-- looks for needs another run's higher fence, drawn after this one; when the
-- sequence's last value is still this fence, nobody drew one, and the call
-- skips the read of lease.event (and the locks its generic plan takes on
-- every partition). Inlined (no SET clause, every name qualified).
CREATE OR REPLACE FUNCTION lease.fence_overtaken(fence bigint)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $fn$
    SELECT pg_catalog.pg_sequence_last_value('lease.fence_seq'::pg_catalog.regclass) IS DISTINCT FROM $1
$fn$;

DROP FUNCTION IF EXISTS lease.higher_fences(text, text, bigint); -- before the time bound
CREATE OR REPLACE FUNCTION lease.higher_fences(account_id text, session_id text, fence bigint, since timestamptz, upto timestamptz)
RETURNS SETOF bigint
LANGUAGE sql STABLE
AS $fn$
    SELECT h.fence
      FROM (SELECT e.fence, e.id FROM lease.event e
             WHERE e.account_id OPERATOR(pg_catalog.=) $1 AND e.session_id OPERATOR(pg_catalog.=) $2
               AND e.at OPERATOR(pg_catalog.>=) ($4 OPERATOR(pg_catalog.-) '1 hour'::pg_catalog.interval)
               AND e.at OPERATOR(pg_catalog.<=) ($5 OPERATOR(pg_catalog.+) '1 hour'::pg_catalog.interval)
               AND e.kind::pg_catalog.text OPERATOR(pg_catalog.<>) ALL (ARRAY['renew_rejected', 'queue_joined', 'queue_left',
                   'handover_asked', 'handover_declined', 'handover_expired', 'limit_set', 'limit_removed',
                   'limit_refused', 'message_sent', 'message_delivered', 'message_carried', 'message_acked',
                   'message_expired']::pg_catalog.text[])
             ORDER BY e.id DESC LIMIT 2) h
     WHERE h.fence OPERATOR(pg_catalog.>) $3
$fn$;

-- check_fence_race raises SQLSTATE 40001 when higher_fences finds a fence
-- above fence: another run acquired and released the key while the caller
-- (its name in call: 'acquire', 'preempt') drew its fence. Called only when
-- fence_overtaken says another fence was drawn after the caller's, so the
-- plan_cache_mode its read wants (see higher_fences) is this rare call's SET
-- clause, not every grant's.
CREATE OR REPLACE FUNCTION lease.check_fence_race(call text, account_id text, session_id text, fence bigint, since timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
SET plan_cache_mode = 'force_generic_plan' -- the read prunes at execution: see higher_fences
AS $fn$
DECLARE
    checked timestamptz := clock_timestamp(); -- the race ended before now: see higher_fences
BEGIN
    IF EXISTS (SELECT FROM lease.higher_fences(check_fence_race.account_id, check_fence_race.session_id,
                                               check_fence_race.fence, check_fence_race.since, checked)) THEN
        RAISE EXCEPTION 'another run acquired and released %/% while this % drew its fence; retry',
            check_fence_race.account_id, check_fence_race.session_id, check_fence_race.call USING ERRCODE = '40001';
    END IF;
END
$fn$;

-- check_fence is the fence check for a write protected by the lease in the same
-- database. Call it inside the transaction that makes the write: it returns true
-- and locks the lease row FOR SHARE (so no takeover can commit before this
-- transaction ends) when run_id still holds an unexpired lease with this fence;
-- otherwise it returns false, locks nothing, and the caller must not write. Only
-- the run's secret id matches: the public id from the table locks nothing.
CREATE OR REPLACE FUNCTION lease.check_fence(account_id text, session_id text, run_id uuid, fence bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM 1
       FROM lease.session_lease l
      WHERE l.account_id = check_fence.account_id
        AND l.session_id = check_fence.session_id
        AND l.run_id = lease.public_run_id(check_fence.run_id)
        AND l.fence = check_fence.fence
        AND l.expires_at > clock_timestamp()
        FOR SHARE;
    RETURN FOUND;
END
$fn$;
