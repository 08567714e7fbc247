-- leasetop: notifications after the commit.
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
-- writes nothing (so it waits for no flush): the trigger keeps the payload of
-- an opted-out transition in the session, and sqlcall.NotifyPending sends it
-- (see pending_key). The value is the transaction's own start time, so only
-- a transaction-local setting opts out: a session-level SET
-- (through a transaction pooler, another client's) matches no later
-- transaction, and every caller that does not opt out is notified here as
-- before. The setting decides only whether this trigger sends the NOTIFY: the
-- event row is written either way, and a listener that misses a notification
-- (the caller died between its commit and its notification) reads the row
-- within a second (data.ListenerConfig.CatchUp).

-- pending_key names the run and the key of the payload the trigger keeps for
-- a caller that notifies after its commit (see the header), in the
-- session-level settings lease.pending_event and lease.pending_for. The
-- library's notification after its commit (internal/sqlcall.NotifyPending)
-- sends it, once, only from the session of the call that wrote it and only
-- for that key and run: a rolled-back call takes its settings back with it,
-- a call that wrote no event (refused, or a retry by the holder) leaves
-- nothing of its own, and through a transaction pooler that ran the
-- notifying transaction on another server connection it finds nothing and
-- sends nothing (listeners read the event within a second,
-- data.ListenerConfig.CatchUp). It gives a caller nothing new: anyone who may
-- connect can NOTIFY lease_events with any payload (see notify_event).
--
-- The account's length comes first, so that no two keys give the same text.
-- Inlined (no SET clause, every name qualified, nothing in it less than
-- immutable: a SQL function that is not inlined is planned again on every
-- call).
CREATE OR REPLACE FUNCTION lease.pending_key(account_id text, session_id text, pub uuid)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $fn$
    SELECT $3::pg_catalog.text OPERATOR(pg_catalog.||) ' '
           OPERATOR(pg_catalog.||) pg_catalog.octet_length($1)::pg_catalog.text OPERATOR(pg_catalog.||) ' '
           OPERATOR(pg_catalog.||) $1 OPERATOR(pg_catalog.||) $2
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

-- quiet_event_id is the id of the event the trigger kept in this session
-- for the caller's notification after its commit (see the header), if it is
-- of the given kinds, on the key, by the run with public id pub; NULL
-- otherwise. The quiet calls forget the kept event before they call, so one
-- that wrote no event (a retry by the holder, a release of nothing) finds
-- none. No read of lease.event: the read of the key's last events it made
-- before cost a SQL caller's cycle more than the call.
CREATE OR REPLACE FUNCTION lease.quiet_event_id(account_id text, session_id text, pub uuid, kinds text[])
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, lease, pg_temp
AS $fn$
DECLARE
    ev json;
BEGIN
    IF current_setting('lease.pending_for', true) IS DISTINCT FROM lease.pending_key(account_id, session_id, pub) THEN
        RETURN NULL;
    END IF;
    ev := current_setting('lease.pending_event', true)::json;
    IF NOT coalesce(ev->>'kind' = ANY (kinds), false) THEN
        RETURN NULL;
    END IF;
    RETURN (ev->>'id')::bigint;
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
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    g lease.grant;
    granted boolean;
    opted text := coalesce(current_setting('lease.caller_notifies', true), '');
BEGIN
    PERFORM set_config('lease.caller_notifies', extract(epoch FROM now())::text, true),
            set_config('lease.pending_for', '', false); -- see quiet_event_id
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
SET enable_seqscan = 'off' -- lookups by key use the key index: see sql.go, Conventions
AS $fn$
#variable_conflict use_column
DECLARE
    released boolean;
    opted text := coalesce(current_setting('lease.caller_notifies', true), '');
BEGIN
    PERFORM set_config('lease.caller_notifies', extract(epoch FROM now())::text, true),
            set_config('lease.pending_for', '', false); -- see quiet_event_id
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
-- The payload is the one the trigger kept in this session for that event
-- (a quiet call's), else the committed row. Either gives a caller nothing
-- it did not have: anyone who may connect can NOTIFY lease_events with any
-- payload (or set the kept one), so listeners take a payload as news to
-- check, never as proof (data.Listener checks its shape and bounds,
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
    -- The event the trigger kept in this session for its caller (a quiet
    -- call's): sent from the session, with no read of lease.event, whose
    -- every partition a read by id alone probes.
    -- Both settings read missing_ok: a session that never kept a payload (a
    -- pooled server connection other than the call's) has neither, and
    -- reads the row.
    IF current_setting('lease.pending_for', true) <> ''
       AND current_setting('lease.pending_event', true)::json->>'id' = notify_event.event_id::text THEN
        PERFORM pg_notify('lease_events', current_setting('lease.pending_event')),
                set_config('lease.pending_for', '', false),
                set_config('lease.pending_event', '', false);
        RETURN true;
    END IF;
    SELECT * INTO ev FROM lease.event e WHERE e.id = notify_event.event_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('lease_events', lease.event_json(ev));
    RETURN true;
END
$fn$;
