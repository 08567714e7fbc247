package monitor

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// TestCompareBeliefs: what a device believes beside the server's leases.
// A disagreement is a mismatch only when the device cannot simply not have
// reported yet; a dead device is judged by what it died holding.
func TestCompareBeliefs(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	k := data.Key{Account: "acme", Session: "chat-1"}
	ours, theirs := uuid.MustParse("00000000-0000-0000-0000-000000000001"), uuid.MustParse("00000000-0000-0000-0000-000000000002")
	mk := func(holder string, run uuid.UUID, acquired, expires time.Time) data.Lease {
		return data.Lease{Key: k, RunID: run, Holder: holder, AcquiredAt: acquired, ExpiresAt: expires}
	}
	mine := mk("desktop pid 1", ours, ago(2*time.Second), now.Add(3*time.Second))
	expired := mk("desktop pid 1", ours, ago(9*time.Second), ago(time.Second))
	taken := mk("phone pid 2", theirs, ago(1200*time.Millisecond), now.Add(3*time.Second))
	belief := []Belief{{Key: k, Run: ours, Fence: 5, Since: ago(2 * time.Second)}}
	tests := []struct {
		name   string
		d      Device
		leases []data.Lease
		want   Comparison
	}{
		{"agrees", Device{State: DeviceHolding, Believes: belief, Reported: ago(time.Second)}, []data.Lease{mine},
			Comparison{Verdict: VerdictAgree, Agreed: []data.Key{k}, Lease: mine}},
		{"nothing on either side", Device{State: DeviceIdle, Reported: ago(time.Second)}, nil,
			Comparison{Verdict: VerdictNothing}},
		{"taken over after its last report, which is recent", Device{State: DeviceHolding, Believes: belief, Reported: ago(2 * time.Second)},
			[]data.Lease{taken}, Comparison{Verdict: VerdictNotYet, Gap: GapTaken, Key: k, Lease: taken}},
		{"taken over before its last report", Device{State: DeviceHolding, Believes: belief, Reported: ago(time.Second)},
			[]data.Lease{taken}, Comparison{Verdict: VerdictMismatch, Gap: GapTaken, Key: k, Lease: taken}},
		{"frozen", Device{State: DeviceFrozen, Believes: belief, Reported: ago(2 * time.Second)},
			[]data.Lease{taken}, Comparison{Verdict: VerdictMismatch, Gap: GapTaken, Key: k, Lease: taken}},
		{"silent past the limit", Device{State: DeviceHolding, Believes: belief, Reported: ago(4 * time.Second)},
			nil, Comparison{Verdict: VerdictMismatch, Gap: GapFree, Key: k}},
		{"released, not reported yet", Device{State: DeviceHolding, Believes: belief, Reported: ago(time.Second)},
			nil, Comparison{Verdict: VerdictNotYet, Gap: GapFree, Key: k}},
		{"its lease expired", Device{State: DeviceHolding, Believes: belief, Reported: ago(200 * time.Millisecond)},
			[]data.Lease{expired}, Comparison{Verdict: VerdictMismatch, Gap: GapExpired, Key: k, Lease: expired}},
		{"granted, not reported yet", Device{State: DeviceTrying, Holder: "desktop pid 1", Reported: ago(2500 * time.Millisecond)},
			[]data.Lease{mine}, Comparison{Verdict: VerdictNotYet, Gap: GapUnbelieved, Key: k, Lease: mine}},
		{"granted before its last report", Device{State: DeviceTrying, Holder: "desktop pid 1", Reported: ago(time.Second)},
			[]data.Lease{mine}, Comparison{Verdict: VerdictMismatch, Gap: GapUnbelieved, Key: k, Lease: mine}},
		{"killed holding it", Device{State: DeviceKilled, Holder: "desktop pid 1", Believes: belief, Reported: ago(time.Second)},
			[]data.Lease{mine}, Comparison{Verdict: VerdictMismatch, Dead: true, Gap: GapStillHeld, Key: k, Lease: mine}},
		{"killed, taken over", Device{State: DeviceKilled, Holder: "desktop pid 1", Believes: belief, Reported: ago(time.Second)},
			[]data.Lease{taken}, Comparison{Verdict: VerdictRepaired, Dead: true, Gap: GapTaken, Key: k, Lease: taken}},
		{"killed, released", Device{State: DeviceKilled, Holder: "desktop pid 1", Believes: belief, Reported: ago(time.Second)},
			nil, Comparison{Verdict: VerdictRepaired, Dead: true, Gap: GapFree, Key: k}},
		{"killed before it reported its grant", Device{State: DeviceKilled, Holder: "desktop pid 1", Reported: ago(3 * time.Second)},
			[]data.Lease{mine}, Comparison{Verdict: VerdictMismatch, Dead: true, Gap: GapUnbelieved, Key: k, Lease: mine}},
		{"killed holding nothing", Device{State: DeviceKilled, Holder: "desktop pid 1", Reported: ago(3 * time.Second)},
			nil, Comparison{Verdict: VerdictNothing, Dead: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(key data.Key) (data.Lease, bool) {
				for _, l := range tt.leases {
					if l.Key == key {
						return l, true
					}
				}
				return data.Lease{}, false
			}
			var held []data.Lease
			for _, l := range tt.leases {
				if l.Holder == tt.d.Holder {
					held = append(held, l)
				}
			}
			got := CompareBeliefs(&tt.d, lookup, held, now, 3*time.Second)
			if got.Verdict != tt.want.Verdict || got.Dead != tt.want.Dead || got.Gap != tt.want.Gap || got.Key != tt.want.Key ||
				got.Lease != tt.want.Lease || len(got.Agreed) != len(tt.want.Agreed) {
				t.Errorf("CompareBeliefs = %+v, want %+v", got, tt.want)
			}
		})
	}
}
