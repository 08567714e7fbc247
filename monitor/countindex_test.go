package monitor

import (
	"runtime"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// TestCountIndexReusesItsBuffers: the header's count index of a big table,
// rebuilt after leases came and went, is sorted in the buffers of the
// index before the last, not in new ones: at a million leases each rebuild
// allocated 16 MB, the most garbage the monitor made at 1000 transitions/s
// (the target: resident memory at most 300 MB). A CountIndex a view still
// holds (the latest, or a paused screen's copy) keeps its counts. Counted
// in bytes allocated, not time.
func TestCountIndexReusesItsBuffers(t *testing.T) {
	const n = 50_000
	base := time.Unix(1_700_000_000, 0)
	s, leases := bigState(n, base)
	mid := base.Add(time.Minute + 500*time.Millisecond) // leases 0 to 3 expired by then
	release := func(i int) {
		l := leases[i]
		s.ApplyEvent(data.Event{ID: int64(n + i + 1), Kind: data.KindReleased, Key: l.Key, RunID: l.RunID, Fence: l.Fence}, base)
	}
	frozen := s.Clone()
	frozenIdx := frozen.CountIndex()
	want := frozenIdx.At(mid)
	var held CountIndex
	for round := range 4 {
		release(round) // one lease fewer, expired at mid
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		held = s.CountIndex()
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; round >= 2 && got > n {
			t.Errorf("round %d: rebuilding the count index of %d leases allocated %d bytes, want at most %d", round, s.Len(), got, n)
		}
		if got := held.At(mid); got.Expired != want.Expired-round-1 || got.Held != want.Held {
			t.Errorf("round %d: counts %+v, want %d expired and %d held", round, got, want.Expired-round-1, want.Held)
		}
	}
	if got := frozenIdx.At(mid); got != want {
		t.Errorf("the paused copy's index counts %+v after the live state's rebuilds, want %+v", got, want)
	}
	if got := frozen.CountIndex().At(mid); got != want {
		t.Errorf("the paused copy counts %+v, want %+v", got, want)
	}
}
