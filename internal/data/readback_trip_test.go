package data_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
)

// TestReadBackIsOneStatement: a listener's read-back of a batch of
// notifications is one statement on the pool, and resolves nothing planted
// in a database whose owner put public before pg_catalog: it names every
// operator and type it needs with its schema instead of pinning the
// search_path in a transaction of its own (BEGIN and the pin, the read,
// COMMIT: three round trips on every waiter's way from a release to its
// next try).
func TestReadBackIsOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, sh, dsn := plantedDatabase(t) // the lease held on acme/s: event 1
	for _, mode := range []string{"cache_statement", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			cfg, err := data.ParsePoolConfig(dsn + "&default_query_exec_mode=" + mode)
			if err != nil {
				t.Fatal(err)
			}
			tr := &tripCounter{}
			cfg.ConnConfig.Tracer = tr
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			ln := data.New(pool).NewListener(data.ListenerConfig{})
			notes := []data.Event{{ID: 1, Kind: data.KindReleased}, {ID: 999, Kind: data.KindReleased}}
			for i := range 2 { // the second on a connection that has prepared it
				tr.queries.Store(0)
				rows, err := ln.ReadBack(ctx, notes)
				if err != nil || len(rows) != 1 || rows[0].ID != 1 || rows[0].Kind != data.KindAcquired {
					t.Fatalf("ReadBack = %+v, %v; want event 1 as it is (acquired) and no 999", rows, err)
				}
				if got := tr.queries.Load(); i == 1 && got != 1 {
					t.Errorf("a read-back took %d statements, want 1", got)
				}
			}
			if ran := sh.Ran(t); len(ran) > 0 {
				t.Errorf("the read-back ran shadows: %v", ran)
			}
		})
	}
}
