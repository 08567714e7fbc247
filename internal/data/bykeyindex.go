package data

import "github.com/jackc/pgx/v5"

// byKeyIndex is the first statement of a batch whose reads find rows by
// key: it turns sequential scans off for the batch's implicit transaction
// alone, as the lease functions do for their calls (sql/functions.sql's
// header). Sessions come and go, so lease.session_lease keeps a few live
// rows while its key index grew with every session it ever held, and
// PostgreSQL then estimates one key through the index above a scan of the
// whole heap, dead rows included.
const byKeyIndex = `SELECT pg_catalog.set_config('enable_seqscan', 'off', true)`

// keyLookupBatch is a batch that begins with byKeyIndex.
func keyLookupBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(byKeyIndex)
	return b
}
