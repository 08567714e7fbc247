package pgtest

import (
	"context"
	"testing"
)

// DropEventPartition detaches and drops, as the superuser, the partition of
// lease.event that where picks out of lease.event_partitions() (a condition
// on its columns part, lo, hi and is_default, from the test's own source),
// as if the maintenance had never made it, and returns its name.
func DropEventPartition(t testing.TB, db DB, where string) string {
	t.Helper()
	ctx := context.Background()
	conn := db.Conn(t)
	var part string
	if err := conn.QueryRow(ctx, `SELECT part::text FROM lease.event_partitions() WHERE NOT is_default AND `+where).Scan(&part); err != nil {
		t.Fatalf("the partition of lease.event where %s: %v", where, err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE lease.event DETACH PARTITION `+part+`; DROP TABLE `+part); err != nil {
		t.Fatalf("drop %s: %v", part, err)
	}
	return part
}
