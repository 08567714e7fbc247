-- leasetop roles: least privilege for the three kinds of client.
--
--   lease_reader  SELECT on the leases and the event history: the monitor in --read-only mode.
--   lease_app     lease_reader + EXECUTE on acquire, renew, renew_many, release, check_fence,
--                 the queue's enqueue, renew_ticket and cancel_ticket, and the hand-over's
--                 ask_handover, hand_over, decline_handover and withdraw_handover, and the
--                 post-commit path acquire_quiet, release_quiet and notify_event: programs
--                 that own executions. No INSERT/UPDATE/DELETE: a lease changes only
--                 through the protocol.
--   lease_admin   lease_app + EXECUTE on force_release: operators.
--   lease_preempt EXECUTE on preempt: taking a lease from an unexpired holder. Not nested in
--                 the others; grant it beside lease_app to the logins that may preempt.
--
-- Roles are NOLOGIN groups; grant them to login roles (GRANT lease_app TO backend).
-- PUBLIC has no rights on anything in schema lease.
--
-- prelude.sql creates the groups and members.sql nests them; this file only
-- grants rights on the schema's objects, so it runs as their owner (lease_owner).

REVOKE ALL ON SCHEMA lease FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA lease FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA lease FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA lease FROM PUBLIC;

GRANT USAGE ON SCHEMA lease TO lease_reader, lease_app, lease_admin, lease_preempt;
GRANT SELECT ON lease.session_lease, lease.event, lease.schema_version TO lease_reader;
GRANT SELECT ON lease.queue_ticket TO lease_reader; -- the queue: public run ids, labels, times
GRANT EXECUTE ON FUNCTION lease.notify_renewals() TO lease_reader;

GRANT EXECUTE ON FUNCTION
    lease.acquire(text, text, uuid, interval, text),
    lease.renew(text, text, uuid, interval),
    lease.renew_many(text[], text[], uuid[], interval),
    lease.release(text, text, uuid),
    lease.check_fence(text, text, uuid, bigint),
    lease.acquire_with(text, text, uuid, interval, text, boolean, text),
    lease.set_attachment(text, text, uuid, text),
    lease.enqueue(text, text, uuid, interval, text),
    lease.renew_ticket(text, text, uuid, interval),
    lease.cancel_ticket(text, text, uuid)
    TO lease_app;

-- The post-commit path for SQL callers (triggers.sql): lease_app.
GRANT EXECUTE ON FUNCTION
    lease.acquire_quiet(text, text, uuid, interval, text),
    lease.release_quiet(text, text, uuid),
    lease.notify_event(bigint),
    lease.pending_key(text, text, uuid) -- the library's notification after an acquire's or release's commit
    TO lease_app;

-- Asking for a hand-over and answering one (sql/handover.sql): lease_app.
GRANT SELECT ON lease.handover_ask TO lease_reader;
GRANT EXECUTE ON FUNCTION
    lease.ask_handover(text, text, uuid, interval, text),
    lease.hand_over(text, text, uuid, interval),
    lease.decline_handover(text, text, uuid),
    lease.withdraw_handover(text, text, uuid)
    TO lease_app;

GRANT EXECUTE ON FUNCTION lease.force_release(text, text, uuid, text) TO lease_admin;

GRANT EXECUTE ON FUNCTION lease.preempt(text, text, uuid, interval, text, text, boolean, text) TO lease_preempt;
