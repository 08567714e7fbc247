package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestNotifyQueueUsageExported: a login with CONNECT only LISTENs, stays in
// a transaction and sends 8 KB notifications, the start of the attack that
// fills PostgreSQL's NOTIFY queue. The exporter, as a lease_reader, exports
// pg_notification_queue_usage() as leasetop_notify_queue_usage_ratio, and
// it shows the queue growing (the alert LeasetopNotifyQueueFilling fires on
// it well before the queue is full).
func TestNotifyQueueUsageExported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	p := startExporter(t, db.ReaderURL(t))
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })

	dsn, login := pgtest.Login(t, db, "")
	attacker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect as %s: %v", login, err)
	}
	defer attacker.Close(ctx)
	if _, err := attacker.Exec(ctx, "LISTEN junk"); err != nil {
		t.Fatalf("LISTEN as %s: %v", login, err)
	}
	tx, err := attacker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's end
	// 256 notifications of one page each, from a second session of the
	// login, committed while the first holds the queue's tail.
	sender, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close(ctx)
	if _, err := sender.Exec(ctx, `SELECT count(pg_notify('junk', i::text || repeat('x', 7990))) FROM generate_series(1, 256) i`); err != nil {
		t.Fatalf("pg_notify as %s: %v", login, err)
	}
	var usage float64
	if err := sender.QueryRow(ctx, `SELECT pg_notification_queue_usage()`).Scan(&usage); err != nil || usage <= 0 {
		t.Fatalf("pg_notification_queue_usage() = %g, %v after the notifications; want > 0", usage, err)
	}
	// The queue only grows while the attacker's transaction is open.
	p.waitMetrics(t, 30*time.Second, "the queue's usage", func(m metricSet) bool {
		return m["leasetop_notify_queue_usage_ratio"] >= usage
	})
}
