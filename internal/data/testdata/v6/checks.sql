-- leasetop: the input checks. Every call refuses bad input with SQLSTATE
-- 22023 and a message that names the argument, before it writes anything:
-- ids of 1 to 512 bytes, labels and reasons within their bounds, all of them
-- passing lease.safe_text (schema.sql); a ttl above 0 and at most 24 hours,
-- also as the span it adds on the database clock; a run id that is neither
-- NULL nor the nil UUID. The check_* functions raise the precise error; the
-- *_ok expressions let valid input pass without a function call.

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
