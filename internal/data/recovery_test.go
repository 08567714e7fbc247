package data_test

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// TestReplayLag: a replay lag exists only on a standby that has replayed a
// commit (pg_last_xact_replay_timestamp() is NULL before, and on a primary).
func TestReplayLag(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		r    data.Recovery
		lag  time.Duration
		ok   bool
	}{
		{"primary", data.Recovery{}, 0, false},
		{"standby before its first replayed commit", data.Recovery{Standby: true}, 0, false},
		{"standby", data.Recovery{Standby: true, LastReplay: now.Add(-1500 * time.Millisecond)}, 1500 * time.Millisecond, true},
		{"standby clock behind the primary's", data.Recovery{Standby: true, LastReplay: now.Add(time.Second)}, 0, true},
	}
	for _, tt := range tests {
		if lag, ok := tt.r.Lag(now); lag != tt.lag || ok != tt.ok {
			t.Errorf("%s: Lag = %v, %v; want %v, %v", tt.name, lag, ok, tt.lag, tt.ok)
		}
	}
}
