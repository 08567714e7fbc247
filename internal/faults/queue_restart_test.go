package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// TestQueueSurvivesServerRestart: two waiters queue behind a holder;
// PostgreSQL is stopped and started again (fast shutdown: every client
// disconnected). The tickets are rows, so the queue is there after the
// restart in the same order; the waiters reconnect and keep them alive, and
// once the holder releases they are granted the lease in the order they
// queued. Like the other tests here it stops the shared server, and never
// runs in parallel.
func TestQueueSurvivesServerRestart(t *testing.T) {
	srv := pgtest.RequireServer(t)
	restartWhenDone(t, srv)
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	key := lease.Key{Account: "acct", Session: "queued"}
	holder := uuid.New()
	if _, err := s.Acquire(ctx, key, holder, time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	granted := queueWaiters(t, s, s, key, "phone", "tablet")

	srv.Stop()
	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	// The pool's connections died with the server: the first reads fail.
	pgtest.Eventually(t, time.Minute, "a read after the restart", func() bool {
		_, err := s.QueueOf(ctx, key)
		return err == nil
	})
	q := leasetest.WaitQueued(t, s, key, 2)
	if q[0].Holder != "phone" || q[1].Holder != "tablet" {
		t.Fatalf("queue after the restart = %s, %s; want phone, tablet", q[0].Holder, q[1].Holder)
	}
	if _, err := s.Release(ctx, key, holder); err != nil {
		t.Fatal(err)
	}
	order := grantOrder(t, granted, 2)
	if fmt.Sprint(order) != "[phone tablet]" {
		t.Fatalf("grants after the restart went to %v, want [phone tablet]", order)
	}
}
