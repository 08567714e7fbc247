package monitor

import "sync/atomic"

// resyncTable is the leases a Feed's resync read straight into columns.
// The State that applies the resync takes them as they are, without a
// copy: at a million leases a copy held some 150 MB beside them a moment.
// So a batch with a resync is applied once; Batch.Clone gives
// another State its own copy.
type resyncTable struct {
	taken atomic.Bool
	t     leaseTable
}

// errAppliedTwice is what applying a Feed's resync a second time panics
// with: the first State owns its leases, and may have changed them since.
const errAppliedTwice = "monitor: a Feed's resync applied twice (Batch.Clone gives another State its own copy)"

// take hands the leases over, once.
func (r *resyncTable) take() leaseTable {
	if !r.taken.CompareAndSwap(false, true) {
		panic(errAppliedTwice)
	}
	t := r.t
	r.t = leaseTable{}
	return t
}

// copy returns an independent copy, not taken yet.
func (r *resyncTable) copy() *resyncTable {
	if r.taken.Load() {
		panic(errAppliedTwice)
	}
	return &resyncTable{t: r.t.clone()}
}
