package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// TestQueueSurvivesPoolerRestart: two waiters queue through PgBouncer (in
// transaction mode, without a listen DSN, so they poll) behind a holder;
// PgBouncer is stopped (every client connection cut) and started again. The
// tickets are rows on the server, so the queue is there, in order, after
// the restart; the waiters reconnect through the pooler and renew their
// tickets, and once the holder releases they are granted the lease in the
// order they queued.
func TestQueueSurvivesPoolerRestart(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	direct := db.Store(t)
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 4})
	pooled := pgtest.OpenStore(t, db.Via(t, b), data.Options{})
	key := lease.Key{Account: "acct", Session: "queued"}
	holder := uuid.New()
	if _, err := direct.Acquire(ctx, key, holder, time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	granted := queueWaiters(t, pooled, direct, key, "phone", "tablet")
	before := leasetest.WaitQueued(t, direct, key, 2)

	b.Stop()
	pgtest.Eventually(t, 30*time.Second, "a read through the stopped pooler to fail", func() bool {
		_, err := pooled.QueueOf(ctx, key)
		return err != nil
	})
	if err := b.Restart(ctx); err != nil {
		t.Fatalf("restart PgBouncer: %v", err)
	}
	pgtest.Eventually(t, time.Minute, "a read through the pooler after the restart", func() bool {
		_, err := pooled.QueueOf(ctx, key)
		return err == nil
	})
	// Each waiter renews its ticket through the restarted pooler.
	pgtest.Eventually(t, time.Minute, "both tickets renewed after the restart", func() bool {
		q, err := direct.QueueOf(ctx, key)
		return err == nil && len(q) == 2 && q[0].RenewedAt.After(before[0].RenewedAt) && q[1].RenewedAt.After(before[1].RenewedAt)
	})
	q := leasetest.WaitQueued(t, direct, key, 2)
	if q[0].Holder != "phone" || q[1].Holder != "tablet" || q[0].ID != before[0].ID || q[1].ID != before[1].ID {
		t.Fatalf("queue after the restart = %s #%d, %s #%d; want the same tickets, phone then tablet", q[0].Holder, q[0].ID, q[1].Holder, q[1].ID)
	}
	if _, err := direct.Release(ctx, key, holder); err != nil {
		t.Fatal(err)
	}
	order := grantOrder(t, granted, 2)
	if fmt.Sprint(order) != "[phone tablet]" {
		t.Fatalf("grants after the pooler restart went to %v, want [phone tablet]", order)
	}
}
