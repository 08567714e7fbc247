-- leasetop triggers: classify every ownership change of lease.session_lease,
-- append it to lease.event and NOTIFY listeners on channel lease_events.
--
--   INSERT                          -> acquired
--   UPDATE that changes run/fence   -> taken_over (prev_run_id, prev_fence, prev_expires_at)
--   DELETE by lease.release         -> released
--   DELETE by lease.force_release   -> force_released (actor = session_user, reason)
--
-- force_release labels its DELETE with the transaction-local settings lease.op
-- and lease.reason; release clears them before its own DELETE, so a caller who
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
-- A caller may send the ownership notification itself, right after its commit,
-- instead of inside it: a transaction that sent a NOTIFY holds PostgreSQL's
-- cluster-wide notify lock through its commit's WAL flush, so notifying
-- transactions commit one at a time. The Go library does (internal/sqlcall):
-- in the call's own transaction it sets
--
--     set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)
--
-- and after the commit it sends the same payload from a transaction that
-- writes nothing (so it waits for no flush). The value is the transaction's own
-- start time, so only a transaction-local setting opts out: a session-level SET
-- (through a transaction pooler, another client's) matches no later
-- transaction, and every caller that does not opt out is notified here as
-- before. The setting decides only whether this trigger sends the NOTIFY: the
-- event row is written either way, and a listener that misses a notification
-- (the caller died between its commit and its notification) reads the row
-- within a second (data.ListenerConfig.CatchUp).

CREATE OR REPLACE FUNCTION lease.on_session_lease_change()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
    why text;
BEGIN
    IF lease.follow_timeline() THEN NULL; END IF; -- before the event: see follow_timeline
    IF TG_OP = 'INSERT' THEN
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
        VALUES (NEW.acquired_at, 'acquired', NEW.account_id, NEW.session_id, NEW.run_id,
                NEW.fence, NEW.expires_at, NEW.holder)
        RETURNING * INTO ev;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id,
                                 fence, prev_fence, expires_at, prev_expires_at, holder)
        VALUES (NEW.acquired_at, 'taken_over', NEW.account_id, NEW.session_id, NEW.run_id, OLD.run_id,
                NEW.fence, OLD.fence, NEW.expires_at, OLD.expires_at, NEW.holder)
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
    IF current_setting('lease.caller_notifies', true) IS DISTINCT FROM extract(epoch FROM now())::text THEN
        PERFORM pg_notify('lease_events', lease.event_json(ev));
    END IF;
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
    IF lease.follow_timeline() THEN NULL; END IF; -- before the event: see follow_timeline
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

CREATE OR REPLACE TRIGGER session_lease_acquired
    AFTER INSERT ON lease.session_lease
    FOR EACH ROW EXECUTE FUNCTION lease.on_session_lease_change();

CREATE OR REPLACE TRIGGER session_lease_taken_over
    AFTER UPDATE ON lease.session_lease
    FOR EACH ROW
    WHEN (OLD.run_id IS DISTINCT FROM NEW.run_id OR OLD.fence IS DISTINCT FROM NEW.fence)
    EXECUTE FUNCTION lease.on_session_lease_change();

CREATE OR REPLACE TRIGGER session_lease_released
    AFTER DELETE ON lease.session_lease
    FOR EACH ROW EXECUTE FUNCTION lease.on_session_lease_change();

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
