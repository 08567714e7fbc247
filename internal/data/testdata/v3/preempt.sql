-- leasetop: preempting a holder, and what a holder publishes about itself
-- (version 3). Runs after functions.sql, as the lease objects' owner; every
-- statement is idempotent.
--
-- A lease row says whether its holder may be preempted (preemptible, set at
-- acquire, by default true) and may carry an attachment: a short opaque text
-- its holder publishes, such as the id of the stream its run writes to, so a
-- device that finds the session busy can join that run instead of starting
-- one. The attachment is no secret: it is readable like the rest of the row.
-- Like holder labels it passes lease.safe_text (no control, bidirectional or
-- invisible character), at most 1 KiB.
--
-- lease.preempt takes the lease now from an unexpired, preemptible holder:
-- the fence rises and the trigger records a 'preempted' event with both
-- runs, both labels and the reason (triggers.sql). Only members of the group
-- lease_preempt may call it (roles.sql).

-- The columns are added only where missing: an ALTER TABLE that changes
-- nothing would still take the tables' exclusive lock on every migrate.
DO $$
DECLARE
    refused constant text := '[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]';
BEGIN
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.session_lease'::regclass
                      AND attname = 'preemptible' AND NOT attisdropped) THEN
        ALTER TABLE lease.session_lease ADD COLUMN preemptible boolean NOT NULL DEFAULT true;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.session_lease'::regclass
                      AND attname = 'attachment' AND NOT attisdropped) THEN
        EXECUTE format($sql$
            ALTER TABLE lease.session_lease ADD COLUMN attachment text
                CONSTRAINT session_lease_attachment_check CHECK (
                    octet_length(attachment) <= 1024 AND attachment !~ %L)$sql$, refused);
    END IF;
    -- The label of the run a transition replaced (a preempted event's victim).
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'lease.event'::regclass
                      AND attname = 'prev_holder' AND NOT attisdropped) THEN
        ALTER TABLE lease.event ADD COLUMN prev_holder text;
    END IF;
END
$$;

-- check_holder_options raises SQLSTATE 22023 unless attachment is NULL or at
-- most 1024 bytes that pass lease.safe_text, and preemptible is not NULL.
CREATE OR REPLACE FUNCTION lease.check_holder_options(preemptible boolean, attachment text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF preemptible IS NULL THEN
        RAISE EXCEPTION 'preemptible must not be NULL' USING ERRCODE = '22023';
    END IF;
    PERFORM lease.check_label('attachment', attachment, 1024);
END
$fn$;

-- acquire_with is lease.acquire with the holder's options: whether it may be
-- preempted, and its attachment ('' or NULL: none). It returns what
-- lease.acquire returns; the options are set on the lease it grants (or
-- holds already, for a retried call) in the same transaction, so nobody sees
-- the lease without them. lease.acquire itself takes the defaults
-- (preemptible, no attachment).
CREATE OR REPLACE FUNCTION lease.acquire_with(
    account_id text, session_id text, run_id uuid, ttl interval, holder text,
    preemptible boolean, attachment text)
RETURNS SETOF lease.grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
DECLARE
    g lease.grant;
BEGIN
    PERFORM lease.check_holder_options(acquire_with.preemptible, acquire_with.attachment);
    SELECT * INTO g FROM lease.acquire(acquire_with.account_id, acquire_with.session_id,
                                       acquire_with.run_id, acquire_with.ttl, acquire_with.holder);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- A grant has locked the row already; a retry's unchanged grant locks it
    -- here, and is no grant if the lease moved on meanwhile.
    UPDATE lease.session_lease l
       SET preemptible = acquire_with.preemptible, attachment = nullif(acquire_with.attachment, '')
     WHERE l.account_id = acquire_with.account_id AND l.session_id = acquire_with.session_id
       AND l.run_id = lease.public_run_id(acquire_with.run_id) AND l.fence = g.fence;
    IF FOUND THEN
        RETURN NEXT g;
    END IF;
END
$fn$;

-- set_attachment replaces the attachment of run_id's unexpired lease ('' or
-- NULL: none) and returns true, or returns false and changes nothing when
-- run_id does not hold it. run_id is the run's secret id: only the holder
-- publishes its attachment. It is no ownership change: no event, no
-- notification.
CREATE OR REPLACE FUNCTION lease.set_attachment(account_id text, session_id text, run_id uuid, attachment text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM lease.check_key(set_attachment.account_id, set_attachment.session_id);
    PERFORM lease.check_label('attachment', set_attachment.attachment, 1024);
    UPDATE lease.session_lease l
       SET attachment = nullif(set_attachment.attachment, '')
     WHERE l.account_id = set_attachment.account_id
       AND l.session_id = set_attachment.session_id
       AND l.run_id = lease.public_run_id(set_attachment.run_id)
       AND l.expires_at > clock_timestamp();
    RETURN FOUND;
END
$fn$;

-- preempt grants the session to run_id for ttl now, taking it from the run
-- that holds it, if any: the holder this call found when it began. It
-- returns one row (run_id, fence, expires_at), as lease.acquire does, when
-- run_id holds the lease afterwards:
--
--   - the key was free or its lease expired: an ordinary grant (acquired or
--     taken_over; nobody was preempted);
--   - an unexpired, preemptible lease: it is replaced, with a new fence drawn
--     under the row lock, and the trigger records 'preempted' (run_id and
--     prev_run_id, holder and prev_holder, the reason and the caller's login
--     as actor). The preempted run's renewals and fence checks fail from the
--     commit on;
--   - run_id's own unexpired lease: unchanged (a retried call).
--
-- It returns zero rows when the key changed hands while the call waited for
-- the row lock (another preempt, or an acquire, got there first): the caller
-- meant to preempt the holder it saw, not the winner of a race, so of
-- preempts that race for one holder exactly one wins. It raises SQLSTATE
-- LP001 (nothing written) when the holder declared at acquire that it must
-- not be preempted.
--
-- The new lease takes preemptible and attachment as lease.acquire_with does.
-- A fresh INSERT is checked against a fence drawn meanwhile as in
-- lease.acquire (SQLSTATE 40001: nothing granted, retry).
CREATE OR REPLACE FUNCTION lease.preempt(
    account_id text, session_id text, run_id uuid, ttl interval, holder text, reason text,
    preemptible boolean DEFAULT true, attachment text DEFAULT NULL)
RETURNS SETOF lease.grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := clock_timestamp();
    pub uuid;
    seen lease.session_lease;
    cur lease.session_lease;
    granted lease.grant;
    inserted boolean;
BEGIN
    PERFORM lease.check_key(preempt.account_id, preempt.session_id);
    PERFORM lease.check_ttl(preempt.ttl);
    IF NOT coalesce(now_ + preempt.ttl > now_ AND now_ + preempt.ttl <= now_ + interval '24 hours', false) THEN
        RAISE EXCEPTION 'ttl must span more than 0 and at most 24 hours on the database clock, got %', preempt.ttl
            USING ERRCODE = '22023';
    END IF;
    PERFORM lease.check_label('holder', preempt.holder, 256);
    PERFORM lease.check_label('reason', preempt.reason, 512);
    PERFORM lease.check_holder_options(preempt.preemptible, preempt.attachment);
    IF preempt.run_id IS NULL OR preempt.run_id = '00000000-0000-0000-0000-000000000000' THEN
        RAISE EXCEPTION 'run_id must not be NULL or the nil UUID' USING ERRCODE = '22023';
    END IF;
    pub := lease.public_run_id(preempt.run_id);

    -- The holder this call means to preempt: the one it finds first, before
    -- it waits for the row lock.
    SELECT * INTO seen FROM lease.session_lease l
     WHERE l.account_id = preempt.account_id AND l.session_id = preempt.session_id;
    SELECT * INTO cur FROM lease.session_lease l
     WHERE l.account_id = preempt.account_id AND l.session_id = preempt.session_id
       FOR UPDATE;
    now_ := clock_timestamp(); -- decide at the moment the row is ours

    IF NOT FOUND THEN
        -- Free (or released while this call waited): an ordinary grant.
        IF lease.follow_timeline() THEN NULL; END IF; -- before the fence and the event: see follow_timeline
        INSERT INTO lease.session_lease AS l
            (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at, preemptible, attachment)
        VALUES (preempt.account_id, preempt.session_id, pub, coalesce(preempt.holder, ''),
                nextval('lease.fence_seq'), now_, now_, now_ + preempt.ttl,
                preempt.preemptible, nullif(preempt.attachment, ''))
        ON CONFLICT (account_id, session_id) DO NOTHING
        RETURNING l.fence, l.expires_at INTO granted.fence, granted.expires_at;
        IF NOT FOUND THEN
            RETURN; -- acquired by another run meanwhile: not the holder this call saw
        END IF;
        -- The INSERT drew its fence before it knew the key was free: as in lease.acquire
        -- (the same list of kinds that are not ownership events).
        IF EXISTS (
            SELECT 1
              FROM (SELECT e.fence FROM lease.event e
                     WHERE e.account_id = preempt.account_id AND e.session_id = preempt.session_id
                       AND e.kind NOT IN ('renew_rejected', 'queue_joined', 'queue_left',
                                          'handover_asked', 'handover_declined', 'handover_expired')
                     ORDER BY e.id DESC LIMIT 2) h
             WHERE h.fence > granted.fence) THEN
            RAISE EXCEPTION 'another run acquired and released %/% while this preempt drew its fence; retry',
                preempt.account_id, preempt.session_id USING ERRCODE = '40001';
        END IF;
        granted.run_id := preempt.run_id;
        RETURN NEXT granted;
        RETURN;
    END IF;

    IF cur.run_id = pub AND cur.expires_at > now_ THEN
        granted := (preempt.run_id, cur.fence, cur.expires_at);
        RETURN NEXT granted; -- a retry: its own lease, unchanged
        RETURN;
    END IF;
    IF cur.run_id <> pub AND cur.fence IS DISTINCT FROM seen.fence THEN
        RETURN; -- the key changed hands while this call waited: another won
    END IF;
    IF cur.expires_at > now_ AND NOT cur.preemptible THEN
        RAISE EXCEPTION 'lease %/% is held by run % (%), which declared that it must not be preempted',
            preempt.account_id, preempt.session_id, cur.run_id, cur.holder USING ERRCODE = 'LP001';
    END IF;

    IF lease.follow_timeline() THEN NULL; END IF; -- before the fence and the event: see follow_timeline
    -- Labels the UPDATE for the trigger, as force_release labels its DELETE:
    -- an unexpired lease replaced with lease.op 'preempt' is recorded as
    -- preempted, with this reason (triggers.sql).
    PERFORM set_config('lease.op', 'preempt', true);
    PERFORM set_config('lease.reason', coalesce(preempt.reason, ''), true);
    UPDATE lease.session_lease l
       SET run_id      = pub,
           holder      = coalesce(preempt.holder, ''),
           fence       = nextval('lease.fence_seq'), -- under the row lock: rises in preempt order
           acquired_at = now_,
           renewed_at  = now_,
           expires_at  = now_ + preempt.ttl,
           preemptible = preempt.preemptible,
           attachment  = nullif(preempt.attachment, '')
     WHERE l.account_id = preempt.account_id AND l.session_id = preempt.session_id
    RETURNING l.fence, l.expires_at INTO granted.fence, granted.expires_at;
    PERFORM set_config('lease.op', '', true);
    PERFORM set_config('lease.reason', '', true);
    granted.run_id := preempt.run_id;
    RETURN NEXT granted;
END
$fn$;

REVOKE ALL ON FUNCTION lease.check_holder_options(boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.acquire_with(text, text, uuid, interval, text, boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.set_attachment(text, text, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.preempt(text, text, uuid, interval, text, text, boolean, text) FROM PUBLIC;
