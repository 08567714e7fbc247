-- leasetop: run ids are capabilities.
--
-- The run_id a program passes to acquire, renew, release and check_fence is
-- its secret; what the table, the events and the notifications store is
-- lease.public_run_id(run_id), which cannot be turned back into the secret.
-- So everyone who may read the table sees who holds what, and only the run
-- itself can renew, release or fence-check its lease. force_release, the
-- operator's call, takes the public id the monitor shows.

-- public_run_id is the id everybody may see for the run whose secret id is
-- run_id: the first 16 bytes of sha256(run_id's 16 bytes), as a version-8
-- (custom) UUID. data.PublicRunID is its Go twin.
--
-- One expression, so that the callers' cached plans inline it: a call of a
-- PL/pgSQL function with its own search_path is set up again in every
-- transaction, and the hot calls (acquire, renew, release, check_fence)
-- each make one. It hashes three times (the version and variant bytes are
-- read from the hash): about a microsecond, far less than the call was. No
-- SET clause, which would stop the inlining, so every name in it is
-- qualified.
CREATE OR REPLACE FUNCTION lease.public_run_id(run_id uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
    SELECT pg_catalog.encode(
               pg_catalog.set_byte(
                   pg_catalog.set_byte(
                       pg_catalog.substr(pg_catalog.sha256(pg_catalog.uuid_send(run_id)), 1, 16),
                       6, (pg_catalog.get_byte(pg_catalog.sha256(pg_catalog.uuid_send(run_id)), 6)
                           OPERATOR(pg_catalog.&) 15) OPERATOR(pg_catalog.|) 128), -- version 8
                   8, (pg_catalog.get_byte(pg_catalog.sha256(pg_catalog.uuid_send(run_id)), 8)
                       OPERATOR(pg_catalog.&) 63) OPERATOR(pg_catalog.|) 128), -- RFC 9562 variant
               'hex')::pg_catalog.uuid
$fn$;
