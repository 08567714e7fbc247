package data_test

import (
	"context"
	"errors"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// checkProbes asks s who held h.Key at each of h's probes and compares.
func checkProbes(t *testing.T, s *data.Store, h pgtest.KnownHistory) {
	t.Helper()
	ctx := context.Background()
	for _, p := range h.Probes {
		got, err := s.OwnersAt(ctx, p.At, data.HistoryFilter{})
		if err != nil {
			t.Fatalf("%s: OwnersAt(%v) err = %v", p.Name, p.At, err)
		}
		var hold *data.Holding
		for i := range got.Holdings {
			if got.Holdings[i].Key == h.Key {
				hold = &got.Holdings[i]
			}
		}
		if !p.Held {
			if hold != nil {
				t.Errorf("%s: OwnersAt = %+v, want nobody", p.Name, *hold)
			}
			continue
		}
		if hold == nil {
			t.Errorf("%s: OwnersAt has no lease on %v, want run %v fence %d", p.Name, h.Key, p.Run, p.Fence)
			continue
		}
		if hold.RunID != p.Run || hold.Fence != p.Fence || hold.Expired != p.Expired ||
			!hold.ExpiresAt.Equal(p.ExpiresAt) || hold.ExpiryKnown != p.ExpiryKnown {
			t.Errorf("%s: got run %v fence %d expired %v expires %v (known %v), want run %v fence %d expired %v expires %v (known %v)",
				p.Name, hold.RunID, hold.Fence, hold.Expired, hold.ExpiresAt, hold.ExpiryKnown,
				p.Run, p.Fence, p.Expired, p.ExpiresAt, p.ExpiryKnown)
		}
	}
}

// "As of T" agrees with a known history at the instants just before and
// at each event, and an instant older than the history is ErrHistoryPruned.
func TestOwnersAtKnownHistory(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	h := pgtest.BuildKnownHistory(t, db, s)
	checkProbes(t, s, h)
	_, err := s.OwnersAt(context.Background(), h.Start.Add(-1000), data.HistoryFilter{})
	if !errors.Is(err, data.ErrHistoryPruned) {
		t.Errorf("OwnersAt before the history start err = %v, want ErrHistoryPruned", err)
	}
}
