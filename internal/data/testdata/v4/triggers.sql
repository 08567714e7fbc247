-- leasetop triggers: classify every ownership change of lease.session_lease,
-- append it to lease.event and NOTIFY listeners on channel lease_events.
--
--   INSERT                          -> acquired
--   UPDATE that changes run/fence   -> taken_over (prev_run_id, prev_fence, prev_expires_at)
--   UPDATE by lease.preempt of an
--   unexpired lease                 -> preempted (as taken_over, plus prev_holder, actor, reason)
--   UPDATE by lease.hand_over       -> handed_over (the same columns; sql/handover.sql)
--   DELETE by lease.release         -> released
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
        INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id,
                                 fence, prev_fence, expires_at, prev_expires_at, holder)
        VALUES (NEW.acquired_at, why, NEW.account_id, NEW.session_id, NEW.run_id, OLD.run_id,
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

-- The post-commit path for SQL callers (issue 29). A transaction that sends a
-- NOTIFY commits alone (see the header), so a caller that acquires and
-- releases through the plain calls gets a fifth of the seed's cycles per
-- second. acquire_quiet and release_quiet are lease.acquire and
-- lease.release with the trigger's NOTIFY left out of their commit, as the
-- Go library does it (internal/sqlcall), and they return the id of the event
-- their transition wrote; the caller then sends that event's notification
-- after its commit, from a transaction of its own that writes nothing:
--
--     SELECT * FROM lease.acquire_quiet('acme', 'chat-1', $run, '30 seconds', 'worker 7');
--     -- committed; then, with the event_id it returned:
--     SELECT lease.notify_event($event_id);
--
-- A caller that never sends it (it died between the two) leaves listeners
-- to read the row within a second, as for the library
-- (data.ListenerConfig.CatchUp). The opt-out covers only the quiet call
-- itself (the setting is put back as the caller had it): a plain call later
-- in the same transaction notifies in its commit as before.

-- quiet_event_id is the id of the newest event of the given kinds on the key
-- by the run with public id pub that this transaction wrote, or NULL. The
-- event is stamped at or after the transaction's start, so the read keeps to
-- the partitions within an hour of now, both ways (a bound below alone would
-- read every partition made ahead; the hour is higher_fences' margin for a
-- clock that steps).
CREATE OR REPLACE FUNCTION lease.quiet_event_id(account_id text, session_id text, pub uuid, kinds text[])
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN (SELECT h.id
              FROM (SELECT e.id, e.run_id, e.kind, e.xmin AS x FROM lease.event e
                     WHERE e.account_id = quiet_event_id.account_id AND e.session_id = quiet_event_id.session_id
                       AND e.at BETWEEN now() - interval '1 hour' AND now() + interval '1 hour'
                     ORDER BY e.id DESC LIMIT 4) h
             WHERE h.run_id = pub AND h.kind = ANY (kinds)
               AND h.x = pg_current_xact_id_if_assigned()::xid
             ORDER BY h.id DESC LIMIT 1);
END
$fn$;

-- What lease.acquire_quiet returns: lease.grant and the event to notify.
DO $$
BEGIN
    IF to_regtype('lease.quiet_grant') IS NULL THEN
        CREATE TYPE lease.quiet_grant AS (run_id uuid, fence bigint, expires_at timestamptz, event_id bigint);
    END IF;
END
$$;

-- acquire_quiet is lease.acquire (same arguments, same outcome) whose
-- ownership notification is not sent in the commit. Its row adds event_id:
-- the acquired or taken_over event this call wrote, to pass to
-- lease.notify_event after the commit; NULL when the call wrote none (a
-- retry by the run that holds the lease already). No row: not granted.
CREATE OR REPLACE FUNCTION lease.acquire_quiet(
    account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS SETOF lease.quiet_grant
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
AS $fn$
#variable_conflict use_column
DECLARE
    g lease.grant;
    granted boolean;
    opted text := coalesce(current_setting('lease.caller_notifies', true), '');
BEGIN
    PERFORM set_config('lease.caller_notifies', extract(epoch FROM now())::text, true);
    SELECT * INTO g FROM lease.acquire(acquire_quiet.account_id, acquire_quiet.session_id,
                                       acquire_quiet.run_id, acquire_quiet.ttl, acquire_quiet.holder);
    granted := FOUND;
    PERFORM set_config('lease.caller_notifies', opted, true); -- as the caller had it
    IF NOT granted THEN
        RETURN;
    END IF;
    RETURN NEXT ROW(g.run_id, g.fence, g.expires_at,
                    lease.quiet_event_id(acquire_quiet.account_id, acquire_quiet.session_id,
                                         lease.public_run_id(acquire_quiet.run_id),
                                         ARRAY['acquired', 'taken_over']))::lease.quiet_grant;
END
$fn$;

-- release_quiet is lease.release (same arguments, same outcome) whose
-- notification is not sent in the commit. It returns the id of the released
-- event, to pass to lease.notify_event after the commit, or NULL when it
-- released nothing (lease.release's false).
--
-- It leaves synchronous_commit alone. The library's release commits without
-- waiting for its flush (a lost release only leaves the lease to expire, and
-- the key's next acquire flushes it first), but its transaction holds the
-- release alone; a function cannot know what else its caller's transaction
-- writes, and those writes must not lose their durability for it. A caller
-- whose transaction holds only the release may add
-- SET LOCAL synchronous_commit = off itself.
CREATE OR REPLACE FUNCTION lease.release_quiet(account_id text, session_id text, run_id uuid)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
SET lock_timeout = '5s'
SET enable_seqscan = 'off' -- lookups by key use the key index: see functions.sql's header
AS $fn$
#variable_conflict use_column
DECLARE
    released boolean;
    opted text := coalesce(current_setting('lease.caller_notifies', true), '');
BEGIN
    PERFORM set_config('lease.caller_notifies', extract(epoch FROM now())::text, true);
    released := lease.release(release_quiet.account_id, release_quiet.session_id, release_quiet.run_id);
    PERFORM set_config('lease.caller_notifies', opted, true); -- as the caller had it
    IF NOT released THEN
        RETURN NULL;
    END IF;
    RETURN lease.quiet_event_id(release_quiet.account_id, release_quiet.session_id,
                                lease.public_run_id(release_quiet.run_id), ARRAY['released']);
END
$fn$;

-- notify_event sends the notification of event id on lease_events, with the
-- trigger's payload (lease.event_json of the row), and returns true; false
-- when there is no such event (pruned, or never written). NULL: nothing.
-- Call it after the commit of the transaction that wrote the event, in a
-- transaction that writes nothing, so that its commit waits for no flush.
--
-- It can only repeat what the history says: the payload is the committed
-- row. That gives a caller nothing it did not have: anyone who may connect
-- can NOTIFY lease_events with any payload, so listeners take a payload as
-- news to check, never as proof (data.Listener checks its shape and bounds,
-- and a consumer reads the table for the truth; a repeat of an id it has
-- seen changes nothing).
CREATE OR REPLACE FUNCTION lease.notify_event(event_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev lease.event;
BEGIN
    SELECT * INTO ev FROM lease.event e WHERE e.id = notify_event.event_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
    RETURN true;
END
$fn$;
