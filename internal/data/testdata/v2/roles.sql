-- leasetop roles: least privilege for the three kinds of client.
--
--   lease_reader  SELECT on the leases and the event history: the monitor in --read-only mode.
--   lease_app     lease_reader + EXECUTE on acquire, renew, renew_many, release and check_fence: programs
--                 that own executions. No INSERT/UPDATE/DELETE: a lease changes only
--                 through the protocol.
--   lease_admin   lease_app + EXECUTE on force_release: operators.
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

GRANT USAGE ON SCHEMA lease TO lease_reader, lease_app, lease_admin;
GRANT SELECT ON lease.session_lease, lease.event, lease.schema_version TO lease_reader;
GRANT EXECUTE ON FUNCTION lease.notify_renewals() TO lease_reader;

GRANT EXECUTE ON FUNCTION
    lease.acquire(text, text, uuid, interval, text),
    lease.renew(text, text, uuid, interval),
    lease.renew_many(text[], text[], uuid[], interval),
    lease.release(text, text, uuid),
    lease.check_fence(text, text, uuid, bigint)
    TO lease_app;

GRANT EXECUTE ON FUNCTION lease.force_release(text, text, uuid, text) TO lease_admin;
