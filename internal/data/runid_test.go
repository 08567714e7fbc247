package data_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestPublicRunIDMatchesSQL: data.PublicRunID and lease.public_run_id agree,
// so the library can name its own run the way the table and the events do.
func TestPublicRunIDMatchesSQL(t *testing.T) {
	t.Parallel()
	conn := pgtest.New(t).Conn(t)
	ids := []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("0d6f1c4e-1111-4222-8333-444455556666")}
	for range 200 {
		ids = append(ids, uuid.New())
	}
	for _, id := range ids {
		var sql uuid.UUID
		if err := conn.QueryRow(context.Background(), `SELECT lease.public_run_id($1)`, id).Scan(&sql); err != nil {
			t.Fatal(err)
		}
		got := data.PublicRunID(id)
		if got != sql {
			t.Fatalf("PublicRunID(%v) = %v, lease.public_run_id = %v", id, got, sql)
		}
		if got.Version() != 8 || got.Variant() != uuid.RFC4122 {
			t.Errorf("PublicRunID(%v) = %v: version %d variant %v, want 8, RFC 4122", id, got, got.Version(), got.Variant())
		}
		if got == id {
			t.Errorf("PublicRunID(%v) is the id itself", id)
		}
	}
}
