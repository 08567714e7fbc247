package monitor

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// TestRowsReuseTheirScratch: listing a big table's rows again, after leases
// came and went, allocates next to nothing: the sort's buffers, the held
// order's positions and the key order's merge are kept from one listing to
// the next. Each listing of a million leases allocated some 45 MB of them,
// garbage a second later at 1000 transitions/s, and the heap grew by as much
// between two collections (the target: resident memory at most 300 MB).
// Counted in bytes allocated, not time.
func TestRowsReuseTheirScratch(t *testing.T) {
	const n = 50_000
	base := time.Unix(1_700_000_000, 0)
	s, leases := bigState(n, base)
	queries := []RowQuery{{Order: OrderTTL}, {Order: OrderAccount}, {Order: OrderHeld}, {Order: OrderHolder}, {Order: OrderTTL, Filter: "sess-00"}}
	var rows []RowRef
	for _, q := range queries { // the first listings size the buffers
		rows = s.Rows(rows[:0], q)
	}
	held := s.Rows(nil, RowQuery{Order: OrderTTL})
	rows = s.Rows(rows[:0], RowQuery{Order: OrderHeld, Held: held})
	fence := int64(n)
	for round := range 4 {
		// Churn: 100 releases, 100 new keys, as a second at 100 transitions/s.
		// The first round's merge sizes the key order's second buffer.
		for j := range 100 {
			l := leases[round*100+j]
			fence++
			s.ApplyEvent(data.Event{ID: fence, Kind: data.KindReleased, Key: l.Key, RunID: l.RunID, Fence: l.Fence}, base)
			fence++
			s.ApplyEvent(data.Event{ID: fence, Kind: data.KindAcquired, Key: data.Key{Account: "acct-new", Session: fmt.Sprint(fence)},
				RunID: uuid.New(), Fence: fence, Holder: "dev-1", At: base, ExpiresAt: base.Add(time.Minute)}, base)
		}
		for _, q := range append(queries, RowQuery{Order: OrderHeld, Held: held}) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rows = s.Rows(rows[:0], q)
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; round > 0 && got > n {
				t.Errorf("round %d, %+v: a listing of %d rows allocated %d bytes, want at most %d (its scratch kept)", round, q.Order, len(rows), got, n)
			}
		}
	}
	if len(rows) == 0 {
		t.Fatal("no rows listed")
	}
}
