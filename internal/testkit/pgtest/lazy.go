package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
)

// LazyStore returns a Store on dsn (any server, any login) that connects only
// when first used and checks no schema, closed when t ends: for tests of what
// a Store's calls return when the connection, the login or the schema is
// wrong.
func LazyStore(t testing.TB, dsn string) *data.Store {
	t.Helper()
	cfg, err := data.ParsePoolConfig(dsn)
	if err != nil {
		t.Fatalf("parse the DSN: %v", err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return data.New(pool)
}
