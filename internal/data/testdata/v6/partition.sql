-- leasetop: the history's partitions (schema.sql partitions lease.event by
-- day of at). Runs as the objects' owner after the functions; ends by making
-- the partitions of today and the next days, so a new or upgraded database
-- has them at once. Granted (roles.sql): maintain_events to lease_admin,
-- nothing else.
--
-- Who calls lease.maintain_events on a schedule: `leasetop maintain` (from
-- cron, daily or more often; README, Retention), as a member of lease_admin.
-- If it stops running, transitions go on: their rows land in
-- lease.event_default until the next run moves them to their day.

-- maintenance holds one row, which lease.maintain_events locks so that it
-- runs one at a time. No role is granted anything on it, so only its owner
-- (the SECURITY DEFINER maintain_events, a superuser) can lock it; an
-- advisory lock, which serialised it before, any role that may connect can
-- take and keep, stopping the partitions ahead and the retention (issue 37).
CREATE TABLE IF NOT EXISTS lease.maintenance (
    singleton boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton)
);
INSERT INTO lease.maintenance (singleton) VALUES (true) ON CONFLICT (singleton) DO NOTHING;

-- event_partitions lists lease.event's partitions with their bounds: lo is
-- null for the first one (MINVALUE), lo and hi are null for the DEFAULT one.
-- The bounds are read back from the catalog's text, which the pinned TimeZone
-- and DateStyle make unambiguous.
CREATE OR REPLACE FUNCTION lease.event_partitions()
RETURNS TABLE (part regclass, lo timestamptz, hi timestamptz, is_default boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET DateStyle = 'ISO, YMD'
AS $fn$
    SELECT c.oid::regclass,
           CASE WHEN b.m[1] = 'MINVALUE' THEN NULL ELSE pg_catalog.btrim(b.m[1], '''')::timestamptz END,
           pg_catalog.btrim(b.m[2], '''')::timestamptz,
           b.m IS NULL
      FROM pg_catalog.pg_inherits i
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
      LEFT JOIN LATERAL (SELECT pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                   '^FOR VALUES FROM \((.*)\) TO \((.*)\)$') AS m) b ON true
     WHERE i.inhparent OPERATOR(pg_catalog.=) 'lease.event'::pg_catalog.regclass
     ORDER BY 3 NULLS LAST
$fn$;

-- maintain_events keeps lease.event's partitions: it moves the rows that
-- landed in lease.event_default into partitions of their day, makes the
-- partitions of today and the ahead days after it where missing, and, when
-- keep is not null, detaches and drops every partition whose days all lie
-- more than keep before the database clock (whole days only: prune_events
-- deletes row by row to the exact instant). One row per thing done: action
-- 'moved' (n_rows: how many rows went to a new partition), 'created' (lo
-- null for the first partition, made again below the oldest day after a
-- drop), 'dropped' (bytes: the size it freed), or 'busy' (a drop that could not get
-- its lock within lock_timeout, left to the next run). Runs one at a time
-- (lease.maintenance's row): while another runs it raises SQLSTATE 55P03 on
-- table lease.maintenance at once (data.MaintainBusyError names the other);
-- a drop takes lease.event's lock for an instant, and waits at most
-- lock_timeout (1 s) for the transactions in its way.
CREATE OR REPLACE FUNCTION lease.maintain_events(keep interval DEFAULT NULL, ahead integer DEFAULT 7)
RETURNS TABLE (action text, part text, lo timestamptz, hi timestamptz, n_rows bigint, bytes bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET TimeZone = 'UTC'
SET lock_timeout = '1s'
AS $fn$
DECLARE
    today timestamptz := date_trunc('day', clock_timestamp(), 'UTC');
    d timestamptz;
    made text;
BEGIN
    IF keep IS NOT NULL AND keep < interval '0' THEN
        RAISE EXCEPTION 'keep must be a non-negative interval' USING ERRCODE = '22023';
    END IF;
    IF ahead IS NULL OR ahead < 0 OR ahead > 366 THEN
        RAISE EXCEPTION 'ahead must be between 0 and 366 days' USING ERRCODE = '22023';
    END IF;
    BEGIN
        PERFORM FROM lease.maintenance m FOR UPDATE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION 'another lease.maintain_events is running'
            USING ERRCODE = '55P03', SCHEMA = 'lease', TABLE = 'maintenance';
    END;

    -- The days that landed in the default partition, each to its own.
    FOR d IN SELECT DISTINCT date_trunc('day', e.at, 'UTC') FROM lease.event_default e ORDER BY 1 LOOP
        SELECT m.made, m.moved INTO made, n_rows FROM lease.make_event_partition(d, true) m;
        IF made IS NOT NULL THEN
            RETURN QUERY SELECT 'moved'::text, made, d, d + interval '1 day', n_rows, NULL::bigint;
        END IF;
    END LOOP;

    FOR i IN 0 .. ahead LOOP
        d := today + make_interval(days => i);
        SELECT m.made INTO made FROM lease.make_event_partition(d, false) m;
        IF made IS NOT NULL THEN
            RETURN QUERY SELECT 'created'::text, made, d, d + interval '1 day', 0::bigint, NULL::bigint;
        END IF;
    END LOOP;

    IF keep IS NOT NULL THEN
        RETURN QUERY SELECT * FROM lease.drop_event_partitions(clock_timestamp() - keep);
    END IF;

    -- The first partition reaches down to MINVALUE, so that a read bounded
    -- above in time (the last event before an instant) never has the DEFAULT
    -- partition in its way: PostgreSQL prunes it when the partitions cover
    -- every time up to the bound, and then reads the partitions in order,
    -- newest first, stopping at the first row (an ordered Append, not a
    -- Merge Append of every partition). After a drop it is made again, empty.
    IF NOT EXISTS (SELECT FROM lease.event_partitions() ep WHERE NOT ep.is_default AND ep.lo IS NULL) THEN
        d := coalesce((SELECT min(ep.lo) FROM lease.event_partitions() ep WHERE NOT ep.is_default), today);
        made := 'event_until_' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD');
        EXECUTE format('CREATE TABLE lease.%I (LIKE lease.event INCLUDING DEFAULTS)', made);
        EXECUTE format('CREATE UNIQUE INDEX %I ON lease.%I (id)', made || '_id_key', made);
        EXECUTE format('ALTER TABLE lease.event ATTACH PARTITION lease.%I FOR VALUES FROM (MINVALUE) TO (%L)', made, d);
        RETURN QUERY SELECT 'created'::text, 'lease.' || quote_ident(made), NULL::timestamptz, d, 0::bigint, NULL::bigint;
    END IF;
END
$fn$;

-- drop_event_partitions detaches and drops every partition of lease.event
-- (but the DEFAULT one) that ends at or before cutoff, oldest first, as
-- maintain_events reports them. Called by maintain_events only.
CREATE OR REPLACE FUNCTION lease.drop_event_partitions(cutoff timestamptz)
RETURNS TABLE (action text, part text, lo timestamptz, hi timestamptz, n_rows bigint, bytes bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT ep.part AS rel, 'lease.' || quote_ident(c.relname) AS name, ep.lo AS lo_, ep.hi AS hi_
               FROM lease.event_partitions() ep JOIN pg_class c ON c.oid = ep.part
              WHERE NOT ep.is_default AND ep.hi <= cutoff ORDER BY ep.hi LOOP
        bytes := pg_total_relation_size(p.rel);
        BEGIN
            EXECUTE format('ALTER TABLE lease.event DETACH PARTITION %s', p.name);
            EXECUTE format('DROP TABLE %s', p.name);
            action := 'dropped';
        EXCEPTION WHEN lock_not_available THEN
            action := 'busy';
            bytes := NULL;
        END;
        part := p.name;
        lo := p.lo_;
        hi := p.hi_;
        n_rows := NULL;
        RETURN NEXT;
    END LOOP;
END
$fn$;

-- make_event_partition makes the partition of the UTC day that starts at d,
-- lease.event_YYYYMMDD, and returns its name, unless a partition already
-- covers any of that day (then null). With from_default it first moves the
-- day's rows out of lease.event_default (locked, so that no new one lands
-- there meanwhile) and says how many it moved. The table is made on its own
-- and then attached, which locks lease.event less than CREATE TABLE ...
-- PARTITION OF would: transitions go on meanwhile. Called by
-- maintain_events only.
CREATE OR REPLACE FUNCTION lease.make_event_partition(d timestamptz, from_default boolean, OUT made text, OUT moved bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, lease, pg_temp
SET TimeZone = 'UTC'
AS $fn$
DECLARE
    name text := 'event_' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD');
    upto timestamptz := d + interval '1 day';
    cols text;
BEGIN
    moved := 0;
    IF EXISTS (SELECT FROM lease.event_partitions() ep
                WHERE NOT ep.is_default AND (ep.lo IS NULL OR ep.lo < upto) AND ep.hi > d) THEN
        RETURN;
    END IF;
    EXECUTE format('CREATE TABLE lease.%I (LIKE lease.event INCLUDING DEFAULTS)', name);
    IF from_default THEN
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
          FROM pg_attribute a
         WHERE a.attrelid = 'lease.event'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
        LOCK TABLE lease.event_default IN SHARE ROW EXCLUSIVE MODE;
        EXECUTE format('WITH m AS (DELETE FROM lease.event_default WHERE at >= $1 AND at < $2 RETURNING %1$s)
                        INSERT INTO lease.%2$I (%1$s) SELECT %1$s FROM m', cols, name) USING d, upto;
        GET DIAGNOSTICS moved = ROW_COUNT;
    END IF;
    EXECUTE format('CREATE UNIQUE INDEX %I ON lease.%I (id)', name || '_id_key', name);
    EXECUTE format('ALTER TABLE lease.event ATTACH PARTITION lease.%I FOR VALUES FROM (%L) TO (%L)', name, d, upto);
    made := 'lease.' || quote_ident(name);
END
$fn$;

SELECT count(*) FROM lease.maintain_events(NULL, 7);
