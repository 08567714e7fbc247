-- leasetop: the one-time steps from version 1 to version 2. `leasetop migrate`
-- runs them only on a database it found at version 1, after the version-2 files,
-- in the same transaction.

-- Version 1 stored each run's own id, which every lease_reader could read and
-- then use to release, renew or fence-check that run's lease. Version 2 stores
-- the public id (lease.public_run_id) and hashes the id it is called with. The
-- holders of live leases keep calling with the id they have, so their rows get
-- that id's public id, and they keep renewing. The UPDATE must not look like a
-- takeover: the trigger that records one is off for it.
ALTER TABLE lease.session_lease DISABLE TRIGGER session_lease_taken_over;
UPDATE lease.session_lease SET run_id = lease.public_run_id(run_id);
ALTER TABLE lease.session_lease ENABLE TRIGGER session_lease_taken_over;

-- The history named the same ids, in its run columns and in the reason of a
-- rejected renewal ("held by run <id>"): the history shows public ids only.
UPDATE lease.event
   SET run_id = lease.public_run_id(run_id),
       prev_run_id = lease.public_run_id(prev_run_id),
       reason = CASE
           WHEN kind = 'renew_rejected' AND reason ~ '^held by run [0-9a-f-]{36}$'
               THEN 'held by run ' || lease.public_run_id(substr(reason, 13)::uuid)::text
           ELSE reason
       END
 WHERE run_id IS NOT NULL OR prev_run_id IS NOT NULL;

-- Version 2 refuses bidirectional formatting and invisible characters in ids
-- and labels too (lease.safe_text), and version 5 checks them with domains
-- instead of the table's CHECKs. schema.sql leaves a version-1 table to this
-- step, after the UPDATE above, which ran under version 1's CHECKs: now they
-- go, and the columns take the domains. Rows written under version 1 are not
-- re-checked (NOT VALID), so no live lease stops a migration; every later
-- write is checked.
SELECT lease.use_text_domains();
