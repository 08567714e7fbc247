-- leasetop triggers: classify every ownership change of lease.session_lease,
-- append it to lease.event and NOTIFY listeners on channel lease_events.
--
--   INSERT                          -> acquired (lease.acquire's: written by acquire)
--   UPDATE that changes run/fence   -> taken_over (prev_run_id, prev_fence, prev_expires_at)
--   UPDATE by lease.preempt of an
--   unexpired lease                 -> preempted (as taken_over, plus prev_holder, actor, reason)
--   UPDATE by lease.hand_over       -> handed_over (as taken_over, plus prev_holder; sql/handover.sql)
--   DELETE by lease.release         -> released (written by release)
--   DELETE by lease.force_release   -> force_released (actor = session_user, reason)
--
-- force_release labels its DELETE with the transaction-local settings lease.op
-- and lease.reason (preempt its UPDATE, which must also replace an unexpired
-- lease, something only preempt does, so a caller's own setting cannot dress
-- up a takeover); release clears them before its own DELETE, so a caller who
-- sets them cannot dress up a release as forced, and the reason is checked again
-- here (check_label) so nothing unchecked reaches the audit trail.
--   TRUNCATE                        -> truncated (listeners must resync)
--
-- Renewals (an UPDATE that changes only renewed_at/expires_at) fire no trigger
-- here: a transaction that NOTIFYs takes PostgreSQL's cluster-wide commit lock,
-- and renewal is the hottest write. lease.set_notify_renewals(true) opts in to
-- a "renewed" notification (no event row) per renewal.
--
-- The payload is lease.event_json(row): compact JSON with id, at, kind,
-- account_id, session_id, run_id, prev_run_id, fence, prev_fence, expires_at,
-- prev_expires_at, holder, actor and reason.
--
-- A caller that notifies after its commit opts out of the NOTIFY here:
-- notify.sql says how, and keeps the SQL callers' side of it.

CREATE OR REPLACE FUNCTION lease.on_session_lease_change()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
    why text;
BEGIN
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    IF TG_OP = 'INSERT' THEN
        -- A grant in a limited account names its slots (limits.sql, take_slots).
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason)
        VALUES (NEW.acquired_at, 'acquired', NEW.account_id, NEW.session_id, NEW.run_id,
                NEW.fence, NEW.expires_at, NEW.holder, nullif(current_setting('lease.slots', true), ''))
        RETURNING * INTO ev;
    ELSIF TG_OP = 'UPDATE' AND OLD.expires_at > NEW.acquired_at
          AND coalesce(current_setting('lease.op', true), '') = 'preempt' THEN
        -- lease.preempt replaced an unexpired lease (acquire takes over
        -- expired ones only), with the reason it set right before.
        why := nullif(current_setting('lease.reason', true), '');
        PERFORM lease.check_label('reason', why, 512);
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id,
                                 fence, prev_fence, expires_at, prev_expires_at, holder, prev_holder, reason)
        VALUES (NEW.acquired_at, 'preempted', NEW.account_id, NEW.session_id, NEW.run_id, OLD.run_id,
                NEW.fence, OLD.fence, NEW.expires_at, OLD.expires_at, NEW.holder, OLD.holder, why)
        RETURNING * INTO ev;
    ELSIF TG_OP = 'UPDATE' THEN
        -- lease.hand_over's UPDATE is a handed_over: it says so in lease.op,
        -- and its ask row, which only it writes, names this owner and fence.
        why := 'taken_over';
        IF current_setting('lease.op', true) = 'handover' AND EXISTS (
            SELECT FROM lease.handover_ask a
             WHERE a.account_id = NEW.account_id AND a.session_id = NEW.session_id
               AND a.state = 'handed_over' AND a.asker_run_id = NEW.run_id AND a.fence = NEW.fence) THEN
            why := 'handed_over';
        END IF;
        -- A hand-over names the holder that let go (prev_holder), as a
        -- preempt names its victim.
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id,
                                 fence, prev_fence, expires_at, prev_expires_at, holder, prev_holder, reason)
        VALUES (NEW.acquired_at, why, NEW.account_id, NEW.session_id, NEW.run_id, OLD.run_id,
                NEW.fence, OLD.fence, NEW.expires_at, OLD.expires_at, NEW.holder,
                CASE WHEN why = 'handed_over' THEN OLD.holder END,
                nullif(current_setting('lease.slots', true), ''))
        RETURNING * INTO ev;
    ELSIF coalesce(current_setting('lease.op', true), '') = 'force' THEN
        why := nullif(current_setting('lease.reason', true), '');
        PERFORM lease.check_label('reason', why, 512);
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason)
        VALUES (clock_timestamp(), 'force_released', OLD.account_id, OLD.session_id, OLD.run_id,
                OLD.fence, OLD.expires_at, OLD.holder, why)
        RETURNING * INTO ev;
    ELSE
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
        VALUES (clock_timestamp(), 'released', OLD.account_id, OLD.session_id, OLD.run_id,
                OLD.fence, OLD.expires_at, OLD.holder)
        RETURNING * INTO ev;
    END IF;
    -- Notified in the commit, or kept in the session for the caller that
    -- notifies after its commit (notify.sql). Session-level, so that it
    -- outlives this transaction if it commits; a rollback takes it back.
    IF lease.notify_or_keep(ev) THEN NULL; END IF;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION lease.on_session_lease_truncate()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
BEGIN
    IF lease.follow_failover() THEN NULL; END IF; -- before the event: see follow_failover
    INSERT INTO lease.event (at, kind) VALUES (clock_timestamp(), 'truncated') RETURNING * INTO ev;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION lease.on_session_lease_renewal()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    PERFORM pg_notify('lease_events', json_build_object(
        'id', 0, 'at', NEW.renewed_at, 'kind', 'renewed',
        'account_id', NEW.account_id, 'session_id', NEW.session_id,
        'run_id', NEW.run_id, 'fence', NEW.fence,
        'expires_at', NEW.expires_at, 'holder', NEW.holder)::text);
    RETURN NULL;
END
$fn$;

-- lease.acquire writes its INSERT's event itself, and lease.release its
-- DELETE's (acquire.sql, release.sql): each says so in lease.op right before
-- its write, and the trigger leaves that row to it. Every other writer of
-- the table sets lease.op before its write too ('' when the trigger is to
-- record it as usual: preempt's grant of a free key), so a value a caller
-- set (SET lease.op, PGOPTIONS) never hides a transition
-- (internal/data's TestEveryLeaseWriterSetsLeaseOp). The trigger's WHEN is a plain
-- expression, evaluated before the trigger is queued.
CREATE OR REPLACE TRIGGER session_lease_acquired
    AFTER INSERT ON lease.session_lease
    FOR EACH ROW
    WHEN (pg_catalog.current_setting('lease.op', true) IS DISTINCT FROM 'acquire')
    EXECUTE FUNCTION lease.on_session_lease_change();

CREATE OR REPLACE TRIGGER session_lease_taken_over
    AFTER UPDATE ON lease.session_lease
    FOR EACH ROW
    WHEN (OLD.run_id IS DISTINCT FROM NEW.run_id OR OLD.fence IS DISTINCT FROM NEW.fence)
    EXECUTE FUNCTION lease.on_session_lease_change();

CREATE OR REPLACE TRIGGER session_lease_released
    AFTER DELETE ON lease.session_lease
    FOR EACH ROW
    WHEN (pg_catalog.current_setting('lease.op', true) IS DISTINCT FROM 'release')
    EXECUTE FUNCTION lease.on_session_lease_change();

CREATE OR REPLACE TRIGGER session_lease_truncated
    AFTER TRUNCATE ON lease.session_lease
    FOR EACH STATEMENT EXECUTE FUNCTION lease.on_session_lease_truncate();

-- set_notify_renewals turns the per-renewal notification on or off. Off by
-- default: it costs every renewal the commit lock (see the header).
CREATE OR REPLACE FUNCTION lease.set_notify_renewals(enabled boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
BEGIN
    IF enabled THEN
        CREATE OR REPLACE TRIGGER session_lease_renewed
            AFTER UPDATE ON lease.session_lease
            FOR EACH ROW
            WHEN (OLD.run_id = NEW.run_id AND OLD.fence = NEW.fence)
            EXECUTE FUNCTION lease.on_session_lease_renewal();
    ELSE
        DROP TRIGGER IF EXISTS session_lease_renewed ON lease.session_lease;
    END IF;
END
$fn$;

-- notify_renewals reports whether renewals NOTIFY (see set_notify_renewals).
CREATE OR REPLACE FUNCTION lease.notify_renewals()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
    SELECT EXISTS (
        SELECT 1 FROM pg_trigger
         WHERE tgrelid = 'lease.session_lease'::regclass AND tgname = 'session_lease_renewed')
$fn$;
