package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.New(t).Store(t)
	k1, k2 := data.Key{Account: "a", Session: "1"}, data.Key{Account: "a", Session: "2"}
	g := mustAcquire(t, s, k1, uuid.New(), time.Minute)
	mustAcquire(t, s, k2, uuid.New(), time.Minute)

	evs, err := s.EventsByID(ctx, []int64{2, 999, 1})
	if err != nil || len(evs) != 2 || evs[0].ID != 1 || evs[1].ID != 2 || evs[0].Fence != g.Fence {
		t.Fatalf("EventsByID(2, 999, 1) = %+v, %v; want rows 1 and 2 in id order", evs, err)
	}
	snap, err := s.LeasesFor(ctx, []data.Key{k1, {Account: "a", Session: "none"}})
	if err != nil || len(snap.Leases) != 1 || snap.Leases[0].Key != k1 || snap.Clock.IsZero() {
		t.Fatalf("LeasesFor = %+v, %v; want only %v with a clock", snap, err, k1)
	}
}
