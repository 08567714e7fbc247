package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestOwnersAtIgnoresAsks: the hand-over's ask events name the asker as
// run_id, the holder as prev_run_id and the holder's fence, as a takeover
// names its runs, but change nobody's ownership: after an ask and its
// decline the holder is still the owner OwnersAt reads; after the hand-over,
// the asker is.
func TestOwnersAtIgnoresAsks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "asked"}
	holder, asker, second := uuid.New(), uuid.New(), uuid.New()
	g := mustAcquire(t, s, k, holder, time.Hour)
	owner := func(what string, run uuid.UUID) {
		t.Helper()
		evs, err := s.EventsFor(ctx, k, 1)
		if err != nil || len(evs) != 1 {
			t.Fatalf("last event: %v, %v", evs, err)
		}
		pgtest.WaitServerPast(t, db.Conn(t), evs[0].At)
		o, err := s.OwnersAt(ctx, evs[0].At, data.HistoryFilter{Keys: []data.Key{k}})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Holdings) != 1 || o.Holdings[0].RunID != data.PublicRunID(run) {
			t.Fatalf("OwnersAt after %s (%s) = %v, want run %v", what, evs[0].Kind, o.Holdings, data.PublicRunID(run))
		}
	}
	if a, err := s.AskHandover(ctx, k, asker, time.Minute, "phone"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v", a, err)
	}
	owner("an ask", holder)
	if a, err := s.DeclineHandover(ctx, k, holder); err != nil || a.Outcome != data.AskDeclined {
		t.Fatalf("DeclineHandover = %+v, %v", a, err)
	}
	owner("a declined ask", holder)
	if a, err := s.AskHandover(ctx, k, second, time.Minute, "tablet"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("second AskHandover = %+v, %v", a, err)
	}
	if a, err := s.HandOver(ctx, k, holder, time.Hour); err != nil || a.Outcome != data.AskHandedOver || a.Fence <= g.Fence {
		t.Fatalf("HandOver = %+v, %v", a, err)
	}
	owner("a hand-over", second)
}
