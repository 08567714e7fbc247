package monitor

import "runtime/debug"

// bigResync is the number of leases above which a resync's read is worth
// handing back to the operating system at once (FreeAfterResync).
const bigResync = 50_000

// FreeAfterResync returns the memory of a resync's read to the operating
// system once the State has applied it, when it read more than bigResync
// leases. The read holds every lease as a data.Lease (about 250 bytes with
// its texts, five times what the State keeps of it), so right after the
// first read of a million leases the Go heap is three times what it holds
// afterwards; without a collection the process would keep that resident
// until enough garbage accumulated to start one, which an idle monitor
// never does. It costs one collection per big resync, and resyncs are rare.
func FreeAfterResync(leases int) {
	if leases > bigResync {
		debug.FreeOSMemory()
	}
}
