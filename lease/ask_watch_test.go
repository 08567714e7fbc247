package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestAskedAtOnceByTheHolderWatch: a holder that watches its asks hears an
// ask's notification (handover_asked on its key) and checks at once, and
// the check reads the ask in its round trip: Asked delivers it long before
// the next renewal (TTL 60s: every 20s). The first ask, declined, only
// makes sure the listener's start (a resync, which renews early) is over.
func TestAskedAtOnceByTheHolderWatch(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: time.Minute})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	asks := l.Asked()
	ask := func(label string) uuid.UUID {
		t.Helper()
		run := uuid.New()
		if a, err := s.AskHandover(ctx, testKey, run, time.Minute, label); err != nil || a.Outcome != data.AskAsked {
			t.Fatalf("AskHandover(%s) = %+v, %v; want asked", label, a, err)
		}
		return data.PublicRunID(run)
	}
	first := ask("phone")
	select {
	case a := <-asks:
		if a.RunID != first {
			t.Fatalf("first ask delivered = %v, want %v", a.RunID, first)
		}
		if err := a.Decline(ctx); err != nil {
			t.Fatalf("Decline: %v", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the first ask was not delivered within 45s")
	}
	second := ask("tablet")
	start := time.Now()
	select {
	case a := <-asks:
		if a.RunID != second {
			t.Fatalf("second ask delivered = %v, want %v", a.RunID, second)
		}
		t.Logf("the second ask delivered %v after it was recorded", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the second ask was not delivered within 10s: it waits for the next renewal, 20s away")
	}
}
