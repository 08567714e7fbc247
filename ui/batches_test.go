package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// fleet returns n healthy leases with 10-minute TTLs.
func fleet(n int) []data.Lease {
	out := make([]data.Lease, n)
	for i := range out {
		out[i] = mkLease(fmt.Sprintf("acct-%02d", i%50), fmt.Sprintf("s-%05d", i), "dev", run(byte(i)), int64(i+1),
			time.Hour, time.Second, 10*time.Minute)
	}
	return out
}

func eventBatch(ev data.Event) monitor.Batch {
	return monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}}
}

// TestBigFleetBatchesWaitForTheTick: above bigTable leases a batch is shown
// with the next tick, not at once (a resync still is); a small table shows
// each batch at once.
func TestBigFleetBatchesWaitForTheTick(t *testing.T) {
	t.Parallel()
	newcomer := data.Event{ID: 900, Kind: data.KindAcquired, At: server, Key: data.Key{Account: "zz-new", Session: "newcomer"},
		RunID: run(99), Fence: 1, ExpiresAt: server.Add(time.Minute), Holder: "late-device"}
	tests := []struct {
		name     string
		leases   int
		wantHeld bool
	}{
		{"small table", 20, false},
		{"at bigTable", bigTable, false},
		{"above bigTable", bigTable + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, clock := newModel(t, 120, 40)
			apply(m, syncBatch(fleet(tt.leases), nil))
			if got := m.State().Len(); got != tt.leases {
				t.Fatalf("after the resync the state has %d leases, want %d at once", got, tt.leases)
			}
			apply(m, eventBatch(newcomer))
			shown := strings.Contains(screen(m), "zz-new/newcomer")
			if shown == tt.wantHeld {
				t.Fatalf("right after the batch the event is on screen: %t, want %t", shown, !tt.wantHeld)
			}
			if got, want := m.State().Seen(900), !tt.wantHeld; got != want {
				t.Errorf("right after the batch the state has the event: %t, want %t", got, want)
			}
			clock.Advance(200 * time.Millisecond)
			m.Update(tickMsg(clock.t))
			if !strings.Contains(screen(m), "zz-new/newcomer") || !m.State().Seen(900) {
				t.Errorf("after the next tick the event is not shown:\n%s", screen(m))
			}
			if len(m.pending) != 0 {
				t.Errorf("%d batches still held after the tick", len(m.pending))
			}
		})
	}
}

// TestBigFleetResyncIsNotHeld: a resync is applied at once, after the
// batches held before it, in order.
func TestBigFleetResyncIsNotHeld(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 120, 40, func(cfg *Config) { cfg.Source.ResyncFunc = func() {} })
	apply(m, syncBatch(fleet(bigTable+10), nil))
	gone := fleet(1)[0]
	apply(m, eventBatch(data.Event{ID: 901, Kind: data.KindReleased, At: server, Key: gone.Key, RunID: gone.RunID, Fence: gone.Fence}))
	if len(m.pending) != 1 {
		t.Fatalf("%d batches held, want 1", len(m.pending))
	}
	press(m, "r")
	apply(m, syncBatch(fleet(bigTable+20), nil))
	if len(m.pending) != 0 || !m.State().Seen(901) {
		t.Errorf("after the resync %d batches are held and event 901 seen: %t; want 0 and true", len(m.pending), m.State().Seen(901))
	}
	if got, want := m.State().Len(), bigTable+20; got != want {
		t.Errorf("after the resync the state has %d leases, want %d", got, want)
	}
	if !strings.Contains(screen(m), fmt.Sprintf("resynced: %d leases", bigTable+20)) {
		t.Errorf("no resynced status at once:\n%s", screen(m))
	}
}
