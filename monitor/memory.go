package monitor

import (
	"os"
	"runtime/debug"
)

// bigResync is the number of leases above which a resync's read is worth
// handing back to the operating system at once (FreeAfterResync).
const bigResync = 50_000

// bigFleet is the number of leases above which the heap is collected more
// often (gcPercentBigFleet), unless GOGC says otherwise.
const bigFleet = 200_000

// gcPercentBigFleet is the collector's target for a big fleet: the heap may
// grow by half of what is live, not by all of it (Go's default, GOGC=100).
// A monitor of a big fleet keeps most of its heap live (the State's columns:
// about 176 MB at a million leases), so the default let its resident memory
// reach twice that at 1000 transitions/s. The cost is a collection twice as
// often, of a heap whose garbage is small: each transition allocates little.
const gcPercentBigFleet = 50

// FreeAfterResync returns the memory of a resync's read to the operating
// system once the State has applied it, when it read more than bigResync
// leases. The read holds every lease as a data.Lease (about 250 bytes with
// its texts, five times what the State keeps of it), so right after the
// first read of a million leases the Go heap is three times what it holds
// afterwards; without a collection the process would keep that resident
// until enough garbage accumulated to start one, which an idle monitor
// never does. It costs one collection per big resync, and resyncs are rare.
// Above bigFleet leases it also lowers the collector's target
// (gcPercentBigFleet) for the rest of the process, unless the environment
// sets GOGC or GOMEMLIMIT: the process is a monitor or an exporter, whose
// heap is mostly its fleet.
// It also sets a soft memory limit a margin above the live heap, kept
// there after every collection (followLiveHeap in memlimit.go).
func FreeAfterResync(leases int) {
	own := leases > bigFleet && os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
	if own {
		debug.SetGCPercent(gcPercentBigFleet)
	}
	if leases > bigResync {
		debug.FreeOSMemory()
	}
	if own && !limitSet() {
		followLiveHeap()
	}
}
