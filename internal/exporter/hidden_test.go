package exporter_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestHiddenTakeoverIsCounted: a lease_app login takes over an expired
// lease in a transaction that opts out of the trigger's NOTIFY, keeps it
// open while 1100 other events commit, and names it in a forged
// notification before committing (issue 23's attacks (b) and (a) at once).
// leasetop_transitions_total{kind="taken_over"} must count it once after
// the commit, listening and polling; before, it was never counted (so
// LeasetopExpiredLeasesUnclaimed fired for a held lease).
func TestHiddenTakeoverIsCounted(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"listen", nil},
		{"poll", []string{"--poll", "50ms"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			pool := db.Pool(t)
			p := startExporter(t, db.URL, mode.args...)
			p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool {
				return m["leasetop_resyncs_total"] >= 1
			})
			if _, err := pool.Exec(ctx, `SELECT lease.acquire('acme', 'hidden', gen_random_uuid(), '1 millisecond', 'victim')`); err != nil {
				t.Fatal(err)
			}
			k := data.Key{Account: "acme", Session: "hidden"}
			pgtest.WaitExpired(t, pool, k)
			waitCounted(t, p, pool, "the victim's lease")

			dsn, _ := pgtest.Login(t, db, "lease_app")
			connect := func() *pgx.Conn {
				c, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close(context.Background()) })
				return c
			}
			attacker, other := connect(), connect()
			tx, err := attacker.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
			theirs := uuid.New()
			if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire('acme', 'hidden', $1, '1 hour', 'attacker')`, theirs); err != nil {
				t.Fatalf("takeover as lease_app: %v", err)
			}
			var id int64
			if err := pool.QueryRow(ctx, `SELECT last_value FROM lease.event_id_seq`).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `SELECT lease.acquire('bulk', 's' || g, gen_random_uuid(), '1 hour', 'bulk')
				FROM generate_series(1, 1100) g`); err != nil {
				t.Fatal(err)
			}
			// A silent acquisition: counted only once the listener's catch-up
			// (or the poller) has read past the bulk.
			err = pgx.BeginFunc(ctx, db.Conn(t), func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `SELECT lease.acquire('acme', 'silent', gen_random_uuid(), '1 hour', 'marker')`)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			waitCounted(t, p, pool, "the bulk and the silent marker")
			payload, err := json.Marshal(map[string]any{"id": id, "at": time.Now(), "kind": data.KindTakenOver,
				"account_id": k.Account, "session_id": k.Session, "run_id": data.PublicRunID(theirs), "holder": "attacker"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, string(payload)); err != nil {
				t.Fatal(err)
			}
			// Notifications come in commit order: once this one is counted,
			// the forged one was read back and found no row.
			if _, err := pool.Exec(ctx, `SELECT lease.acquire('acme', 'marker', gen_random_uuid(), '1 hour', 'marker')`); err != nil {
				t.Fatal(err)
			}
			waitCounted(t, p, pool, "the marker after the forged notification")
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			got := waitCounted(t, p, pool, "the hidden takeover")
			if got["taken_over"] != 1 {
				t.Fatalf("lease.event has %d takeovers, want 1", got["taken_over"])
			}
		})
	}
}
