package ui

import (
	"runtime"
	"testing"
)

// TestModelBytesPerLease holds a model of 100,000 leases with its sorted
// rows and measures the heap it adds to the resync's read: the
// State's columns and the rows' references take about 150 bytes a lease,
// where a map of data.Lease and a copy of every lease for the table took
// about 600 (the target: a million leases in 300 MB). Not a speed test: the
// heap after a collection does not depend on the machine's load.
func TestModelBytesPerLease(t *testing.T) {
	const n = 100_000
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	leases := scaleLeaseSet(n)
	before := heap()
	m, _ := scaleModel(leases, 200, 50)
	after := heap() // the leases still held: what the model adds (it shares their session texts)
	runtime.KeepAlive(leases)
	if len(m.rows) != n {
		t.Fatalf("%d rows, want %d", len(m.rows), n)
	}
	per := (float64(after) - float64(before)) / n
	t.Logf("%.0f bytes a lease kept by the model", per)
	if per > 250 {
		t.Errorf("the model keeps %.0f bytes a lease, want at most 250", per)
	}
	runtime.KeepAlive(m)
}
