package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestMigrateCannotBeStalled: any role may take the advisory lock migrate
// serialises on, and a lease_app may leave a transaction open after an
// acquire. Before, migrate then waited for ever, and every other client's
// acquire queued behind its pending table lock. Now it waits a lock_timeout
// at a time, lets the traffic through between attempts, and gives up after
// its Wait naming the session in its way; once that session is gone it
// migrates.
func TestMigrateCannotBeStalled(t *testing.T) {
	t.Parallel()
	const advisoryKey = 0x6c65617365746f70 // data.migrateLock: "leasetop"
	for _, tt := range []struct {
		name  string
		group string // the blocking login's lease role
		block string // what it runs and leaves open
		what  string // what the error must say it holds
	}{
		{"open transaction", "lease_app", `BEGIN; SELECT * FROM lease.acquire('acme', 'held', gen_random_uuid(), '1 minute', 'blocker')`, "lease."},
		{"advisory lock", "", fmt.Sprintf(`SELECT pg_advisory_lock(%d)`, int64(advisoryKey)), "advisory lock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			db := pgtest.New(t)
			dsn, _ := pgtest.Login(t, db, tt.group)
			blocker, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Close(ctx)
			if _, err := blocker.Exec(ctx, tt.block); err != nil {
				t.Fatalf("%s: %v", tt.block, err)
			}
			pid := int(blocker.PgConn().PID())

			// Live traffic on other keys, from its own connection, counted
			// while the migration waits.
			appDSN, _ := pgtest.Login(t, db, "lease_app")
			app, err := data.Open(ctx, appDSN)
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			var cycles atomic.Int64
			trafficCtx, stopTraffic := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- traffic(trafficCtx, app, &cycles)
			}()

			admin := db.Conn(t)
			before := cycles.Load()
			_, err = data.MigrateWith(ctx, admin, data.MigrateOptions{Wait: 3 * time.Second})
			during := cycles.Load() - before
			stopTraffic()
			if err := <-done; err != nil {
				t.Fatalf("traffic while migrate waited: %v", err)
			}
			var be *data.MigrateBlockedError
			if !errors.As(err, &be) {
				t.Fatalf("MigrateWith = %v, want a *MigrateBlockedError", err)
			}
			if len(be.Blockers) == 0 || be.Blockers[0].PID != pid || !strings.Contains(be.Blockers[0].What, tt.what) {
				t.Errorf("blockers %+v, want pid %d first, holding %q", be.Blockers, pid, tt.what)
			}
			if msg := be.Error(); !strings.Contains(msg, fmt.Sprintf("pid %d", pid)) || !strings.Contains(msg, "pg_terminate_backend") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming pid %d and how to end it", msg, pid)
			}
			if during == 0 {
				t.Errorf("no acquire and release completed on other keys while migrate waited: live traffic queued behind it")
			}
			t.Logf("%d acquire+release cycles on other keys while migrate waited", during)

			blocker.Close(ctx)
			pgtest.WaitBackendGone(t, admin, pid)
			if err := data.Migrate(ctx, admin); err != nil {
				t.Fatalf("Migrate once the blocker is gone: %v", err)
			}
		})
	}
}

// traffic acquires and releases fresh keys until ctx ends, counting cycles.
func traffic(ctx context.Context, s *data.Store, cycles *atomic.Int64) error {
	for i := 0; ; i++ {
		k, run := data.Key{Account: "acme", Session: fmt.Sprintf("live-%d", i)}, uuid.New()
		if _, err := s.Acquire(ctx, k, run, time.Minute, "live"); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if _, err := s.Release(ctx, k, run); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		cycles.Add(1)
	}
}
