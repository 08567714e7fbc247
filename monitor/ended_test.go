package monitor

import (
	"fmt"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
)

// TestAnOutdatedAcquireShowsNoLease: after a resync whose events hold a
// session's release and whose snapshot holds no lease of it, the acquire
// that release ended (an id below the resync's window, not seen) arrives:
// it is recorded, and shows no lease. A later acquire, at a higher fence,
// does.
func TestAnOutdatedAcquireShowsNoLease(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	release := data.Event{ID: 30, Kind: data.KindReleased, Key: keyA, RunID: runs[0], Fence: 7, At: t0}
	s.ApplySync(syncOf(20, nil, release), t0)
	if !s.ApplyEvent(acquired(10, keyA, runs[0], 7, t0), t0) {
		t.Fatal("the outdated acquire was not recorded as a new event")
	}
	if l, ok := s.Lease(keyA); ok {
		t.Fatalf("the outdated acquire shows %+v, want no lease", l)
	}
	s.ApplyEvent(acquired(40, keyA, runs[1], 8, t0), t0)
	if l, ok := s.Lease(keyA); !ok || l.RunID != runs[1] || l.Fence != 8 {
		t.Fatalf("the next acquire shows %v %+v, want run %v fence 8", ok, l, runs[1])
	}
}

// TestEndedFencesStayBounded: the fences remembered for sessions without a
// lease stay within maxEnded, forgetting the lowest (oldest) first, and a
// truncation forgets them all.
func TestEndedFencesStayBounded(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	key := func(i int) data.Key { return data.Key{Account: "acme", Session: fmt.Sprint("s", i)} }
	for i := 1; i <= maxEnded+10; i++ {
		s.ApplyEvent(data.Event{ID: int64(i), Kind: data.KindReleased, Key: key(i), RunID: runs[0], Fence: int64(i), At: t0}, t0)
	}
	if n := len(s.members[0].ended); n > maxEnded || n < maxEnded/2 {
		t.Fatalf("%d fences remembered, want between %d and %d", n, maxEnded/2, maxEnded)
	}
	if _, ok := s.members[0].ended[key(maxEnded+10)]; !ok {
		t.Fatal("the newest fence was forgotten")
	}
	if _, ok := s.members[0].ended[key(1)]; ok {
		t.Fatal("the oldest fence was kept past the bound")
	}
	s.ApplyEvent(data.Event{ID: maxEnded + 20, Kind: data.KindTruncated, At: t0}, t0)
	if len(s.members[0].ended) != 0 {
		t.Fatalf("%d fences remembered after a truncation, want none", len(s.members[0].ended))
	}
}
