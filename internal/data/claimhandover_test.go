package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestClaimHandedOver: before the hand-over the asker's claim is refused
// (ErrNotHeld) and writes nothing; after it, the claim returns the fence
// handed over and renews the row for the asker's TTL, not the holder's.
func TestClaimHandedOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	holderS, askerS := db.Store(t), db.Store(t)
	k := data.Key{Account: "acme", Session: "claim"}
	holder, asker := uuid.New(), uuid.New()
	mustAcquire(t, holderS, k, holder, time.Second)
	if a, err := askerS.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v; want asked", a, err)
	}
	n := len(keyEvents(t, askerS, k))
	if g, err := askerS.ClaimHandedOver(ctx, k, asker, time.Hour); !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("claim before the hand-over = %+v, %v; want ErrNotHeld", g, err)
	}
	if got := len(keyEvents(t, askerS, k)); got != n {
		t.Fatalf("a refused claim wrote %d events, want none", got-n)
	}
	h, err := holderS.HandOver(ctx, k, holder, time.Second)
	if err != nil || h.Outcome != data.AskHandedOver {
		t.Fatalf("HandOver = %+v, %v; want handed_over", h, err)
	}
	g, err := askerS.ClaimHandedOver(ctx, k, asker, time.Hour)
	if err != nil {
		t.Fatalf("claim after the hand-over: %v", err)
	}
	if g.RunID != asker || g.Fence != h.Fence {
		t.Fatalf("claim = run %s fence %d, want run %s fence %d", g.RunID, g.Fence, asker, h.Fence)
	}
	row, _, ok, err := askerS.Lease(ctx, k)
	if err != nil || !ok {
		t.Fatalf("Lease(%v) = found %v, %v", k, ok, err)
	}
	if row.ExpiresAt.Sub(row.RenewedAt) != time.Hour || !row.ExpiresAt.Equal(g.ExpiresAt) {
		t.Fatalf("row runs %s to %s after the claim; want the asker's 1h0m0s, to %s", row.ExpiresAt.Sub(row.RenewedAt), row.ExpiresAt, g.ExpiresAt)
	}
}
