package monitor_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestFeedResyncsBelowAFailover: after a failover the new primary's
// event ids start 2^43 above the old primary's (lease.follow_failover).
// A transition committed just before the failover, which the consumer was
// never notified of (its listener's connection died with the old primary)
// and which the new primary has (a synchronous standby), must still reach
// the consumer, and its screen must equal the table. The first id
// after the failover that the feed receives makes it resync from a window
// below the old primary's newest id, not below the new one.
//
// Without a real failover: the sequence is moved as follow_failover moves
// it, the missed notification is a transaction that opts out of the
// trigger's NOTIFY, and the listener's catch-up is off (after a
// reconnection it resumes past the ids already committed, leaving them to
// the resync, as here).
func TestFeedResyncsBelowAFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn, writer := db.Store(t), db.Conn(t), db.Store(t)
	m := monitortest.NewMirror(s, monitor.FeedConfig{
		Listener:      data.ListenerConfig{CatchUp: -1},
		DeltaInterval: time.Hour, NotifiedInterval: time.Hour,
	}, monitor.Config{})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = m.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, m, "the first resync", func(st *monitor.State) bool { return st.Synced() })

	before := monitor.MustAcquire(t, writer, data.Key{Account: "tl", Session: "before"}, uuid.New(), time.Minute)
	waitFor(t, m, "the notified transition", func(st *monitor.State) bool { return st.Len() == 1 })

	// Committed on the old primary, never notified.
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT * FROM lease.acquire('tl', 'unnotified', gen_random_uuid(), '1 minute', 'silent')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The new primary's first write: ids on WAL timeline 2.
	if _, err := conn.Exec(ctx, `SELECT setval('lease.event_id_seq', $1)`, data.FailoverStride); err != nil {
		t.Fatal(err)
	}
	after := monitor.MustAcquire(t, writer, data.Key{Account: "tl", Session: "after"}, uuid.New(), time.Minute)
	if after.Fence <= before.Fence {
		t.Fatalf("fences %d then %d, want rising", before.Fence, after.Fence)
	}
	assertMirrorsDB(t, m, conn)
}
