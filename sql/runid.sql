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
-- each make one. Inlined, it hashes three times (public_run_id_of reads the
-- version and variant bytes from the digest, and the inlined digest is
-- computed at each use), some 5 us each; lease.acquire and lease.release
-- keep the digest in a variable and call public_run_id_of, which hashes
-- once. No SET clause, which would stop the inlining, so every name in
-- them is qualified.
--
-- public_run_id_of is the public id of the run whose secret's digest
-- (sha256 of its 16 bytes) is digest.
CREATE OR REPLACE FUNCTION lease.public_run_id_of(digest bytea)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
    SELECT pg_catalog.encode(
               pg_catalog.set_byte(
                   pg_catalog.set_byte(
                       pg_catalog.substr($1, 1, 16),
                       6, (pg_catalog.get_byte($1, 6) OPERATOR(pg_catalog.&) 15) OPERATOR(pg_catalog.|) 128), -- version 8
                   8, (pg_catalog.get_byte($1, 8) OPERATOR(pg_catalog.&) 63) OPERATOR(pg_catalog.|) 128), -- RFC 9562 variant
               'hex')::pg_catalog.uuid
$fn$;

CREATE OR REPLACE FUNCTION lease.public_run_id(run_id uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
    SELECT lease.public_run_id_of(pg_catalog.sha256(pg_catalog.uuid_send(run_id)))
$fn$;
