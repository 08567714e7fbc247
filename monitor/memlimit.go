package monitor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// A monitor or an exporter of a big fleet keeps most of its heap live (the
// State's columns: some 220 MB at a million leases), and Go's collector
// lets the heap grow by a fraction of what is live before it collects. At
// GOGC=50 that let the resident memory reach 330 MB at a million leases and
// 1000 transitions/s, more than the target of 300 MB, and GOGC cannot say
// "a little above what is live" without collecting all the time at a small
// heap. A soft memory limit can: followLiveHeap sets one, after every
// collection, a margin above the heap that collection found live (never
// below limitFloor). It follows the fleet as it grows or shrinks, so the
// limit never sits below what is live (where the collector would run
// without end).

// limitMarginMin is the least room the limit leaves above the live heap.
const limitMarginMin = 24 << 20

// limitMarginDiv sets the room above the live heap to a fraction of it:
// live/limitMarginDiv.
const limitMarginDiv = 8

// limitFloor is the least limit set. Below it the collector is paced by
// GOGC (gcPercentBigFleet) and the limit only caps: a limit close above a
// small heap makes the collector run often, and an exporter's scrapes wait
// for it (its scrape p99 was 426 ms under GOMEMLIMIT=280MiB at a million
// leases, 24 ms without).
const limitFloor = 256 << 20

// memoryLimitFor is the soft memory limit for a live heap of live bytes
// when the runtime holds inUse bytes right after a collection: the live
// heap, the unused room in its spans, stacks and the collector's own
// memory (all of which the limit counts).
func memoryLimitFor(live, inUse uint64) int64 {
	limit := max(max(inUse, live)+max(live/limitMarginDiv, limitMarginMin), limitFloor)
	return int64(min(limit, math.MaxInt64))
}

// setLimitFromLiveHeap sets the soft memory limit from what the last
// collection found live and what the runtime holds now, but what it
// has handed back to the system or holds free.
func setLimitFromLiveHeap() {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	live, total, idle := v(0), v(1), v(2)+v(3)
	if live == 0 || total < idle {
		return // no collection yet
	}
	debug.SetMemoryLimit(memoryLimitFor(live, total-idle))
}

// followLiveHeap sets the soft memory limit from the live heap now and
// after every collection from now on: each collection frees an object
// whose cleanup sets the limit and makes the next one.
func followLiveHeap() {
	setLimitFromLiveHeap()
	watchNextCollection()
}

func watchNextCollection() {
	sentinel := new([32]byte) // not a tiny allocation, which may never be freed
	runtime.AddCleanup(sentinel, func(struct{}) {
		setLimitFromLiveHeap()
		watchNextCollection()
	}, struct{}{})
}

// limitSet reports whether the process has a soft memory limit: from
// GOMEMLIMIT, or set by followLiveHeap already.
func limitSet() bool { return debug.SetMemoryLimit(-1) != math.MaxInt64 }
