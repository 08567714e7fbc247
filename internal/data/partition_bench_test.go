package data_test

import (
	"context"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BenchmarkPartitionCost measures what the partitioned history costs each
// transition (its event row routed to the day's partition): acquire+release
// cycles against a database whose lease.event is turned back into one plain
// table (primary key on id, the same three indexes, the identity sequence
// under its name, lease.event_json for its row type), interleaved, with BenchmarkHistoryIndexCost's metrics
// ("-without": the plain table).
//
//	go test ./data -run '^$' -bench PartitionCost -benchtime 3000x
func BenchmarkPartitionCost(b *testing.B) {
	with, without := pgtest.New(b), pgtest.New(b)
	plainEventTable(b, without)
	interleavedCycles(b, with.Store(b), without.Store(b))
}

// plainEventTable turns db's lease.event back into one plain table (primary
// key on id, the same three indexes, the identity sequence under its name,
// lease.event_json for its row type): the baseline of the partition benches.
func plainEventTable(b *testing.B, db pgtest.DB) {
	ctx := context.Background()
	if _, err := db.Conn(b).Exec(ctx, `
		ALTER TABLE lease.event RENAME TO event_partitioned;
		ALTER SEQUENCE lease.event_id_seq RENAME TO event_partitioned_id_seq;
		ALTER INDEX lease.event_session_idx RENAME TO event_partitioned_session_idx;
		ALTER INDEX lease.event_at_idx RENAME TO event_partitioned_at_idx;
		ALTER INDEX lease.event_key_at_idx RENAME TO event_partitioned_key_at_idx;
		CREATE TABLE lease.event (LIKE lease.event_partitioned INCLUDING DEFAULTS INCLUDING IDENTITY, PRIMARY KEY (id));
		ALTER TABLE lease.event OWNER TO lease_owner;
		CREATE INDEX event_session_idx ON lease.event (account_id, session_id, id);
		CREATE INDEX event_at_idx ON lease.event (at);
		CREATE INDEX event_key_at_idx ON lease.event (account_id, session_id, at, id);
		CREATE FUNCTION lease.event_json(e lease.event) RETURNS text LANGUAGE plpgsql STABLE
		SET search_path = pg_catalog, lease, pg_temp AS $$ BEGIN RETURN row_to_json(e)::text; END $$`); err != nil {
		b.Fatal(err)
	}
}
