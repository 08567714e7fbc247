-- leasetop functions: the only write path to lease.session_lease.
--
-- Every function samples clock_timestamp() once and uses that instant for every
-- comparison and timestamp it writes, so one call sees one "now" on the database
-- clock. Functions are SECURITY DEFINER with a pinned search_path; callers need
-- only EXECUTE (see roles.sql). lock_timeout bounds how long a call can wait
-- behind another transaction that holds the row.
--
-- Every entry point also sets enable_seqscan off, so that its lookups by key
-- use the key index whatever the statistics say. Sessions come and go: the
-- tables keep a few live rows while their key index grew with every session
-- they ever held, and PostgreSQL's estimate for one key through such an index
-- (its pages over its few tuples) comes out above a scan of the whole heap,
-- dead rows included. It then read the table on every call: 165 pages per
-- acquire and per release in a long bench database, about a tenth of a
-- cycle's server CPU (data/churned_plan_test.go). No lookup here wants a
-- sequential scan.
--
-- Every search_path ends in pg_temp. Unless it is listed, PostgreSQL searches
-- the caller's temporary schema *first* for types and relations, so a caller
-- could shadow text or timestamptz with a domain whose CHECK runs as the
-- function's owner (data/attack_pgtemp_test.go).
--
-- Run ids are capabilities. The run_id a program passes to acquire, renew,
-- release and check_fence is its secret; what the table, the events and the
-- notifications store is lease.public_run_id(run_id), which cannot be turned
-- back into the secret. So everyone who may read the table sees who holds what,
-- and only the run itself can renew, release or fence-check its lease.
-- force_release, the operator's call, takes the public id the monitor shows.

-- public_run_id is the id everybody may see for the run whose secret id is
-- run_id: the first 16 bytes of sha256(run_id's 16 bytes), as a version-8
-- (custom) UUID. data.PublicRunID is its Go twin.
--
-- One expression, so that the callers' cached plans inline it: a call of a
-- PL/pgSQL function with its own search_path is set up again in every
-- transaction, and the hot calls (acquire, renew, release, check_fence)
-- each make one. It hashes three times (the version and variant bytes are
-- read from the hash): about a microsecond, far less than the call was. No
-- SET clause, which would stop the inlining, so every name in it is
-- qualified.
CREATE OR REPLACE FUNCTION lease.public_run_id(run_id uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
    SELECT pg_catalog.encode(
               pg_catalog.set_byte(
                   pg_catalog.set_byte(
                       pg_catalog.substr(pg_catalog.sha256(pg_catalog.uuid_send(run_id)), 1, 16),
                       6, (pg_catalog.get_byte(pg_catalog.sha256(pg_catalog.uuid_send(run_id)), 6)
                           OPERATOR(pg_catalog.&) 15) OPERATOR(pg_catalog.|) 128), -- version 8
                   8, (pg_catalog.get_byte(pg_catalog.sha256(pg_catalog.uuid_send(run_id)), 8)
                       OPERATOR(pg_catalog.&) 63) OPERATOR(pg_catalog.|) 128), -- RFC 9562 variant
               'hex')::pg_catalog.uuid
$fn$;

-- check_key raises SQLSTATE 22023 unless both ids are 1..512 bytes that pass
-- lease.safe_text (no control, bidirectional or line-separator characters).
CREATE OR REPLACE FUNCTION lease.check_key(account_id text, session_id text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF account_id IS NULL OR octet_length(account_id) NOT BETWEEN 1 AND 512 THEN
        RAISE EXCEPTION 'account_id must be 1 to 512 bytes' USING ERRCODE = '22023';
    END IF;
    IF session_id IS NULL OR octet_length(session_id) NOT BETWEEN 1 AND 512 THEN
        RAISE EXCEPTION 'session_id must be 1 to 512 bytes' USING ERRCODE = '22023';
    END IF;
    IF NOT lease.safe_text(account_id) THEN
        RAISE EXCEPTION 'account_id must not contain control or bidirectional formatting characters' USING ERRCODE = '22023';
    END IF;
    IF NOT lease.safe_text(session_id) THEN
        RAISE EXCEPTION 'session_id must not contain control or bidirectional formatting characters' USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- check_ttl raises SQLSTATE 22023 unless 0 < ttl <= 24 hours, comparing the
-- interval as PostgreSQL does (a month as 30 days, a day as 24 hours). That is
-- not the span the interval adds to a timestamp: month and day parts that
-- cancel in the comparison do not cancel on the calendar ('3000000 months
-- -90000000 days 23 hours' compares as 23 hours and adds some 3,600 years), and
-- a day in a time zone with daylight saving time is 23 or 25 hours. So acquire
-- and renew also check the span of the expiry they store, on the database
-- clock: now_ < now_ + ttl <= now_ + 24 hours.
CREATE OR REPLACE FUNCTION lease.check_ttl(ttl interval)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF ttl IS NULL OR ttl <= interval '0' OR ttl > interval '24 hours' THEN
        RAISE EXCEPTION 'ttl must be greater than 0 and at most 24 hours, got %', coalesce(ttl::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- check_label raises SQLSTATE 22023 unless a holder label or reason is at most
-- max_bytes bytes that pass lease.safe_text.
CREATE OR REPLACE FUNCTION lease.check_label(name text, value text, max_bytes integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF octet_length(value) > max_bytes THEN
        RAISE EXCEPTION '% must be at most % bytes', name, max_bytes USING ERRCODE = '22023';
    END IF;
    IF NOT lease.safe_text(value) THEN
        RAISE EXCEPTION '% must not contain control or bidirectional formatting characters', name USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- key_ok, ttl_ok and grant_ok are the validation of the calls' arguments as
-- one expression each, for valid input to pass without a function call: a
-- call of a function with its own search_path is set up again in every
-- transaction (three of them cost an acquire about a tenth of its time).
-- Plain SQL functions without a SET clause, so the callers' cached plans
-- inline them; every name in them is qualified (their callers pin their
-- search_path anyway). They answer NULL for NULL input: callers wrap them in
-- coalesce(..., false), and input they refuse goes to the check_* functions
-- (or refuse_grant) for the precise error.

-- key_ok is check_key as one expression: true when check_key passes.
CREATE OR REPLACE FUNCTION lease.key_ok(account_id text, session_id text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT pg_catalog.octet_length(account_id) OPERATOR(pg_catalog.>=) 1
       AND pg_catalog.octet_length(account_id) OPERATOR(pg_catalog.<=) 512
       AND pg_catalog.octet_length(session_id) OPERATOR(pg_catalog.>=) 1
       AND pg_catalog.octet_length(session_id) OPERATOR(pg_catalog.<=) 512
       AND lease.safe_text(account_id OPERATOR(pg_catalog.||) session_id)
$fn$;

-- ttl_ok is check_ttl_span as one expression: true when ttl is greater than
-- 0 and at most 24 hours, and so is the span now_ + ttl on the calendar.
CREATE OR REPLACE FUNCTION lease.ttl_ok(ttl interval, now_ timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $fn$
    SELECT ttl OPERATOR(pg_catalog.>) '0'::pg_catalog.interval
       AND ttl OPERATOR(pg_catalog.<=) '24 hours'::pg_catalog.interval
       AND (now_ OPERATOR(pg_catalog.+) ttl) OPERATOR(pg_catalog.>) now_
       AND (now_ OPERATOR(pg_catalog.+) ttl) OPERATOR(pg_catalog.<=) (now_ OPERATOR(pg_catalog.+) '24 hours'::pg_catalog.interval)
$fn$;

-- grant_ok is refuse_grant's test as one expression: true when a grant's
-- arguments (key, ttl, holder label, run id) pass. One safe_text test
-- covers the ids and the label.
CREATE OR REPLACE FUNCTION lease.grant_ok(account_id text, session_id text, run_id uuid, ttl interval, holder text, now_ timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $fn$
    SELECT pg_catalog.octet_length(account_id) OPERATOR(pg_catalog.>=) 1
       AND pg_catalog.octet_length(account_id) OPERATOR(pg_catalog.<=) 512
       AND pg_catalog.octet_length(session_id) OPERATOR(pg_catalog.>=) 1
       AND pg_catalog.octet_length(session_id) OPERATOR(pg_catalog.<=) 512
       AND lease.ttl_ok(ttl, now_)
       AND COALESCE(pg_catalog.octet_length(holder), 0) OPERATOR(pg_catalog.<=) 256
       AND run_id OPERATOR(pg_catalog.<>) '00000000-0000-0000-0000-000000000000'::pg_catalog.uuid
       AND lease.safe_text(account_id OPERATOR(pg_catalog.||) session_id OPERATOR(pg_catalog.||) COALESCE(holder, ''))
$fn$;

-- check_ttl_span raises SQLSTATE 22023 unless ttl passes check_ttl and the
-- expiry now_ + ttl it gives on the database clock spans more than 0 and at
-- most 24 hours (see check_ttl): the check of every call that stores now_ +
-- ttl.
CREATE OR REPLACE FUNCTION lease.check_ttl_span(ttl interval, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    PERFORM lease.check_ttl(ttl);
    IF NOT coalesce(now_ + ttl > now_ AND now_ + ttl <= now_ + interval '24 hours', false) THEN
        RAISE EXCEPTION 'ttl must span more than 0 and at most 24 hours on the database clock, got %', ttl
            USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- check_run_id raises SQLSTATE 22023 when a run id that is to hold or wait
-- for a lease is NULL or the nil UUID. The nil UUID is no secret: its public
-- id would let anyone renew, release and fence-check the lease (data.Acquire
-- refuses it too).
CREATE OR REPLACE FUNCTION lease.check_run_id(run_id uuid)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF run_id IS NULL OR run_id = '00000000-0000-0000-0000-000000000000' THEN
        RAISE EXCEPTION 'run_id must not be NULL or the nil UUID' USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- refuse_grant raises the precise SQLSTATE 22023 error for a grant's
-- arguments that grant_ok refused: the key (check_key), the ttl and its span
-- (check_ttl_span), the holder label (check_label) and the run id
-- (check_run_id), in that order. It always raises: call it only when
-- grant_ok is not true. lease.acquire, lease.preempt and lease.enqueue
-- share it.
CREATE OR REPLACE FUNCTION lease.refuse_grant(account_id text, session_id text, run_id uuid, ttl interval, holder text, now_ timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    PERFORM lease.check_key(account_id, session_id);
    PERFORM lease.check_ttl_span(ttl, now_);
    PERFORM lease.check_label('holder', holder, 256);
    PERFORM lease.check_run_id(run_id);
    RAISE EXCEPTION 'invalid arguments' USING ERRCODE = '22023'; -- grant_ok and the checks above disagree: refuse anyway
END
$fn$;

-- Failover. A fence must never repeat, or a resource that accepts fence >=
-- last_fence would accept two owners; an event id names one transition, or a
-- monitor that has seen the id ignores the next transition given it. With
-- asynchronous replication a promoted standby can lack the last commits the
-- old primary acknowledged, and with them the state of fence_seq and of the
-- event ids (a sequence logs 32 values ahead in WAL, and that WAL can be lost
-- too), so its next values could repeat ones already handed out. A promoted
-- standby writes on a new WAL timeline, so on timeline T both sequences are
-- first moved to at least (T - 1) * 2^43: more than any primary of an earlier
-- timeline could hand out (2^43 values each), and nothing moves on timeline
-- 1, where every database starts. They rise across 2^20 failovers before
-- bigint runs out. Every function that draws a fence or inserts into
-- lease.event checks first: IF lease.follow_timeline() THEN NULL; END IF;
-- (data/timeline_test.go holds every such function to it).

-- timeline_floor is (T - 1) * 2^43 for the server's WAL timeline T (the
-- first 8 hex digits of a WAL file's name).
CREATE OR REPLACE FUNCTION lease.timeline_floor()
RETURNS bigint
LANGUAGE sql VOLATILE
AS $fn$
    SELECT ((('x' OPERATOR(pg_catalog.||)
              pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::pg_catalog.bit(32)::pg_catalog.int8)
            OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.*) 8796093022208
$fn$;

-- move_past_timeline moves fence_seq and the event ids to timeline_floor(),
-- on the first write on a new timeline, and reports true. The first writer
-- moves them holding lease.schema_version's row (written only by migrate), so
-- that two cannot interleave their setval calls (one could set a sequence
-- back below a value the other had drawn); a concurrent one does not wait
-- for it (a release holding a lease row could deadlock with an acquire) but
-- raises SQLSTATE 40001, to retry.
CREATE OR REPLACE FUNCTION lease.move_past_timeline()
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    floor_ bigint := lease.timeline_floor();
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

-- follow_timeline is the check: false unless it had to move the sequences.
-- A plain SQL function that its callers inline, it reads the timeline and
-- the two sequences' last values and no table: about 1 us. It has no SET
-- clause, which would stop the inlining, so every name in it is qualified
-- (its callers pin their search_path anyway). Call it in an IF, not with
-- PERFORM: a plain expression skips the executor (5 us less).
CREATE OR REPLACE FUNCTION lease.follow_timeline()
RETURNS boolean
LANGUAGE sql VOLATILE
AS $fn$
    SELECT CASE
        WHEN pg_catalog.pg_is_in_recovery() THEN false -- a standby: the write that follows fails as read-only (25006)
        WHEN LEAST(COALESCE(pg_catalog.pg_sequence_last_value('lease.fence_seq'), 0),
                   COALESCE(pg_catalog.pg_sequence_last_value('lease.event_id_seq'), 0))
             OPERATOR(pg_catalog.>=) lease.timeline_floor() THEN false
        ELSE lease.move_past_timeline()
    END
$fn$;

-- higher_fences is the fence-race check of a grant that INSERTed the key's
-- row with a fence drawn before it knew the key was free: the fences above
-- fence among the key's two latest ownership events. Any row means another
-- run acquired and released the key in between, and the caller raises
-- SQLSTATE 40001 (serialization_failure: nothing granted, retry). Whoever
-- held the key before this grant committed its events before the INSERT
-- could succeed, and nobody else can take the key until this transaction
-- ends, so those two events (this grant's and the one before it) show any
-- higher fence. Rejected renewals, the queue's events and the hand-over asks
-- (which carry an older holder's fence) are not ownership events;
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
-- the callers SET plan_cache_mode = force_generic_plan. Left to choose,
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
                   'handover_asked', 'handover_declined', 'handover_expired']::pg_catalog.text[])
             ORDER BY e.id DESC LIMIT 2) h
     WHERE h.fence OPERATOR(pg_catalog.>) $3
$fn$;

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
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
SET plan_cache_mode = 'force_generic_plan' -- the fence-race read prunes at execution: see higher_fences
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    granted lease.grant;
    inserted boolean;
    queued boolean;
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
    -- if it were held. A session without a queue pays one probe of an
    -- empty range of queue_ticket's primary key.
    queued := EXISTS (SELECT 1 FROM lease.queue_ticket q
                       WHERE q.account_id = acquire.account_id AND q.session_id = acquire.session_id
                         AND q.expires_at > now_);
    IF queued AND NOT lease.queue_admits(acquire.account_id, acquire.session_id, pub, now_) THEN
        RETURN;
    END IF;

    IF lease.follow_timeline() THEN NULL; END IF; -- before the fence and the event: see follow_timeline
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
        IF queued THEN
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

-- record_zombie is the zombie rule of lease.renew and lease.renew_many: a
-- rejected renewal of the key by the run whose public id is pub, where cur
-- is the key's row as the call read it (NULL: no lease), is recorded as a
-- renew_rejected event, with the public run id, and notified, if the run
-- held this key: its own expired lease, or the run in one of the key's last
-- 1000 events (event_session_idx, newest first, bounded). Any other
-- rejected renewal writes nothing, so a caller renewing random keys or run
-- ids cannot flood the history and the notifications, nor fake zombies on
-- real sessions. Returns whether it recorded one.
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
    IF lease.follow_timeline() THEN NULL; END IF; -- before the event: see follow_timeline
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
-- a renew_rejected event, with the public run id, and notified. Any other
-- rejected renewal writes nothing: a caller renewing random keys or run ids
-- cannot flood the history and the notifications, nor fake zombies on real
-- sessions.
CREATE OR REPLACE FUNCTION lease.renew(account_id text, session_id text, run_id uuid, ttl interval)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
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
-- held the key is recorded as a renew_rejected event; NULL run ids and runs
-- that never held the key write nothing). Each renewal renews only its own
-- row: a rejected one leaves the others renewed.
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

    -- The rest, one by one, as lease.renew decides a rejection.
    FOR r IN
        SELECT u.a, u.s, u.r, u.k::integer AS k
          FROM unnest(renew_many.account_ids, renew_many.session_ids, renew_many.run_ids) WITH ORDINALITY AS u(a, s, r, k)
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
        cur := NULL;
        SELECT * INTO cur FROM lease.session_lease l
         WHERE l.account_id = r.a AND l.session_id = r.s;
        IF cur.run_id = pub AND cur.renewed_at = now_ THEN
            expires_at := cur.expires_at; -- a key named twice: renewed above, for its other k
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF cur.run_id = pub AND cur.expires_at > now_ THEN
            CONTINUE; -- held, unexpired and locked by another transaction: undecided, left out
        END IF;
        RETURN NEXT;
        PERFORM lease.record_zombie(r.a, r.s, pub, cur, now_);
    END LOOP;
END
$fn$;

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
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
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
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
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
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
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

-- event_json is the notification payload for an event row: compact JSON, the
-- row's columns by name in their order, bounded by the column constraints to
-- well under 8000 bytes. PL/pgSQL, not SQL: a SQL function with its own
-- search_path is parsed and planned again on every call (it cost a notifying
-- transition about a quarter of its time); PL/pgSQL keeps its plan for the
-- session. The Go library sends the same payload after its commit
-- (internal/sqlcall: row_to_json of the row, without this function).
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
