package exporter

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestExpiredWaitsForTheViewOfRenewals: a lease whose
// expiry passed 2 s ago counts as expired when the feed reads every
// renewal each second, and as held while the feed's view of renewals may be
// 5 s old (a pass of its sweep of the lease table): its renewal may not
// have been read yet.
func TestExpiredWaitsForTheViewOfRenewals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		age           time.Duration
		held, expired int
	}{{0, 0, 1}, {5 * time.Second, 1, 0}} {
		e := New(nil, Config{})
		now := time.Now()
		sync := data.Sync{Snapshot: data.Snapshot{Clock: data.NewClock(now, now, now), Leases: []data.Lease{{
			Key: data.Key{Account: "acme", Session: "chat-1"}, RunID: uuid.New(), Holder: "desk", Fence: 1,
			AcquiredAt: now.Add(-time.Minute), RenewedAt: now.Add(-30 * time.Second), ExpiresAt: now.Add(-2 * time.Second),
		}}}}
		e.apply(monitor.Batch{Items: []monitor.Item{{Sync: &sync, At: now}}, RenewalsAge: tt.age}, now)
		s := e.scan(now)
		if s.total.held != tt.held || s.total.expired != tt.expired {
			t.Errorf("view of renewals up to %v old: held %d expired %d, want held %d expired %d",
				tt.age, s.total.held, s.total.expired, tt.held, tt.expired)
		}
	}
}
