-- leasetop roles: least privilege for the three kinds of client.
--
--   lease_reader  SELECT on the leases, the event history and the messages' metadata: the monitor in --read-only mode.
--   lease_app     lease_reader + EXECUTE on acquire, renew, renew_many, release, check_fence,
--                 the queue's enqueue, renew_ticket and cancel_ticket, and the hand-over's
--                 ask_handover, hand_over, decline_handover and withdraw_handover, the
--                 preempted run's preempt_stopped, the inbox's send_message,
--                 receive_messages, ack_message, ack_messages and message_state, and the
--                 post-commit path acquire_quiet, release_quiet and notify_event: programs
--                 that own executions. No INSERT/UPDATE/DELETE: a lease changes only
--                 through the protocol.
--   lease_admin   lease_app + EXECUTE on force_release, the queue's clear_queue,
--                 maintain_events, maintain_messages, the limits' set_limit and remove_limit,
--                 and the messages' bodies: operators.
--   lease_preempt EXECUTE on preempt and preempt_pending: taking a lease from an unexpired
--                 holder, and learning when its work stopped. Not nested in the others;
--                 grant it beside lease_app to the logins that may preempt.
--
-- Roles are NOLOGIN groups; grant them to login roles (GRANT lease_app TO backend).
-- PUBLIC has no rights on anything in schema lease.
--
-- prelude.sql creates the groups and members.sql nests them; this file only
-- grants rights on the schema's objects, so it runs as their owner (lease_owner).
-- Every grant of the lease objects is here: one made by another file, which
-- runs before this one, would be taken back below.
--
-- It first takes back every right anyone but the owner holds on the schema
-- and its objects, columns included, whoever granted it, and then grants the
-- ones below again: a grant made by hand (GRANT USAGE, CREATE ON SCHEMA lease
-- TO lease_app, which let any app login plant lease.=, issue 37) does not
-- survive a migrate. So do PUBLIC's default rights: EXECUTE on functions, and
-- USAGE on types, which let a lease_app login create a function or operator
-- of lease.id_text (public.=(lease.id_text, text) wins over text's =; a cast
-- needs no USAGE). prelude.sql removes the default privileges that would hand
-- out what is made later (maintain_events' partitions).
DO $$
DECLARE
    stmt text;
BEGIN
    FOR stmt IN
        SELECT DISTINCT format('REVOKE ALL ON %s %s FROM %s CASCADE', o.kind, o.name,
                               CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END)
          FROM (SELECT 'SCHEMA' AS kind, 'lease' AS name, n.nspacl AS acl, n.nspowner AS owner
                  FROM pg_namespace n WHERE n.nspname = 'lease'
                UNION ALL
                SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.oid::regclass::text, c.relacl, c.relowner
                  FROM pg_class c WHERE c.relnamespace = 'lease'::regnamespace
                UNION ALL -- a column's rights: REVOKE ON TABLE takes them back too
                SELECT 'TABLE', c.oid::regclass::text, t.attacl, c.relowner
                  FROM pg_attribute t JOIN pg_class c ON c.oid = t.attrelid
                 WHERE c.relnamespace = 'lease'::regnamespace AND t.attacl IS NOT NULL
                UNION ALL
                SELECT 'ROUTINE', p.oid::regprocedure::text, coalesce(p.proacl, acldefault('f', p.proowner)), p.proowner
                  FROM pg_proc p WHERE p.pronamespace = 'lease'::regnamespace
                UNION ALL
                SELECT 'TYPE', t.oid::regtype::text, coalesce(t.typacl, acldefault('T', t.typowner)), t.typowner
                  FROM pg_type t WHERE t.typnamespace = 'lease'::regnamespace
                   AND NOT (t.typelem <> 0 AND t.typlen = -1) -- an array type follows its element's
                   AND coalesce((SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid), 'c') = 'c') o -- and a table's row type its table's
         CROSS JOIN LATERAL aclexplode(o.acl) a
          LEFT JOIN pg_roles r ON r.oid = a.grantee
         WHERE a.grantee <> o.owner
    LOOP
        EXECUTE stmt;
    END LOOP;
END
$$;

REVOKE ALL ON SCHEMA lease FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA lease FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA lease FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA lease FROM PUBLIC;

GRANT USAGE ON SCHEMA lease TO lease_reader, lease_app, lease_admin, lease_preempt;
GRANT SELECT ON lease.session_lease, lease.event, lease.schema_version TO lease_reader;
GRANT SELECT ON lease.queue_ticket TO lease_reader; -- the queue: public run ids, labels, times
GRANT SELECT ON lease.account_limit, lease.limit_slot TO lease_reader; -- limits and who holds their slots
GRANT EXECUTE ON FUNCTION lease.notify_renewals() TO lease_reader;

GRANT EXECUTE ON FUNCTION
    lease.acquire(text, text, uuid, interval, text, text, smallint),
    lease.renew(text, text, uuid, interval),
    lease.renew_many(text[], text[], uuid[], interval),
    lease.release(text, text, uuid),
    lease.check_fence(text, text, uuid, bigint),
    lease.acquire_with(text, text, uuid, interval, text, boolean, text, text, smallint),
    lease.set_attachment(text, text, uuid, text),
    lease.enqueue(text, text, uuid, interval, text),
    lease.renew_ticket(text, text, uuid, interval),
    lease.cancel_ticket(text, text, uuid)
    TO lease_app;

-- The post-commit path for SQL callers (triggers.sql): lease_app.
GRANT EXECUTE ON FUNCTION
    lease.acquire_quiet(text, text, uuid, interval, text, text, smallint),
    lease.release_quiet(text, text, uuid),
    lease.notify_event(bigint),
    lease.pending_key(text, text, uuid) -- the library's notification after an acquire's or release's commit
    TO lease_app;

-- Asking for a hand-over and answering one (sql/handover.sql): lease_app.
GRANT SELECT ON lease.handover_ask TO lease_reader;
GRANT EXECUTE ON FUNCTION
    lease.ask_handover(text, text, uuid, interval, text, boolean, text),
    lease.hand_over(text, text, uuid, interval),
    lease.decline_handover(text, text, uuid),
    lease.withdraw_handover(text, text, uuid)
    TO lease_app;

GRANT EXECUTE ON FUNCTION lease.force_release(text, text, uuid, text) TO lease_admin;
GRANT EXECUTE ON FUNCTION lease.clear_queue(text, text, uuid, text) TO lease_admin;
-- Limits (sql/limits.sql): operators set them, never lease_app.
GRANT EXECUTE ON FUNCTION lease.set_limit(text, text, integer), lease.remove_limit(text, text) TO lease_admin;

-- Retention drops history: operators' right (lease_admin). The helpers are
-- the owner's alone (maintain_events calls them as the owner).
GRANT EXECUTE ON FUNCTION lease.maintain_events(interval, integer) TO lease_admin;

GRANT EXECUTE ON FUNCTION lease.preempt(text, text, uuid, interval, text, text, boolean, text, text, smallint) TO lease_preempt;

-- After a preempt (sql/preempt.sql): the preempted run says its work stopped
-- (lease_app, whose logins hold leases), and the preemptor asks whether it
-- did (lease_preempt, and lease_app for a preemptor that is both).
GRANT SELECT ON lease.preempted_run TO lease_reader;
GRANT EXECUTE ON FUNCTION lease.preempt_stopped(text, text, uuid) TO lease_app;
GRANT EXECUTE ON FUNCTION lease.preempt_pending(text, text, uuid) TO lease_app, lease_preempt;

-- The inbox (sql/inbox.sql): lease_app sends, receives and acknowledges
-- (only the holder may do the last two); lease_reader reads the messages'
-- metadata but not their bodies nor their keys; lease_admin reads the
-- bodies too and keeps the inbox.
GRANT SELECT (account_id, session_id, id, kind, sender, actor, sent_at, expires_at, delivered_run, delivered_fence,
              delivered_at, acked_run, acked_fence, acked_at, expired_at) ON lease.message TO lease_reader;
GRANT SELECT ON lease.message TO lease_admin;
GRANT EXECUTE ON FUNCTION
    lease.send_message(text, text, text, text, text, text, interval),
    lease.receive_messages(text, text, uuid, bigint, integer),
    lease.ack_message(text, text, uuid, bigint),
    lease.ack_messages(text, text, uuid, bigint[]),
    lease.message_state(text, text, text)
    TO lease_app;
GRANT EXECUTE ON FUNCTION lease.maintain_messages(interval, integer) TO lease_admin;
