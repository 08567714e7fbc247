package bench

import (
	"context"
	"strings"
)

// workload is one named measurement. It reports one or more Results.
type workload struct {
	name string
	run  func(ctx context.Context, r *run, w workload) ([]Result, error)
	// optIn workloads run only when named in Config.Only.
	optIn bool
}

// group is the name's part before the first '-': "acquire" selects acquire,
// acquire-notrigger and acquire-contended.
func (w workload) group() string {
	g, _, _ := strings.Cut(w.name, "-")
	return g
}

// loopWorkload makes a closed-loop workload; l's rows default to one row
// named after the workload.
func loopWorkload(name, desc string, l func(r *run) loop) workload {
	return workload{name: name, run: func(ctx context.Context, r *run, w workload) ([]Result, error) {
		lp := l(r)
		if len(lp.rows) == 0 {
			lp.rows = []row{{name: name, desc: desc}}
		}
		return r.runLoop(ctx, w, lp)
	}}
}

// workloads returns every workload in the order they run: each measurement
// next to the baseline it is compared with.
func workloads() []workload {
	return []workload{
		loopWorkload("select1", "SELECT 1: the round-trip floor", selectOne),
		loopWorkload("advisory", "pg_try_advisory_xact_lock on the client's own keys (what people use instead)", advisory),
		loopWorkload("upsert", "plain PK UPSERT (acquire's statement) on a copy of the table without trigger", plainUpsert),
		loopWorkload("acquire-notrigger", "lease.acquire's code on the copy without trigger (no event row, no NOTIFY)", acquireNoTrigger),
		loopWorkload("acquire-eventonly", "lease.acquire's code on a copy whose trigger writes the event row but does not NOTIFY", acquireEventOnly),
		loopWorkload("acquire", "lease.acquire, uncontended: takes over the client's own expired keys (event row + NOTIFY)", acquire),
		loopWorkload("upsert-contended", "the UPSERT on one key held by another run, all clients at once", upsertContended),
		loopWorkload("acquire-contended", "lease.acquire on one key held by another run, all clients at once", acquireContended),
		loopWorkload("cycle", "", cycle),
		loopWorkload("renew-notrigger", "lease.renew's code on the copy without trigger", renewNoTrigger),
		loopWorkload("renew", "lease.renew (renewals do not NOTIFY by default)", renew),
		{name: "renew-notify", run: renewNotify},
		{name: "handoff-notify", run: handoffWorkload(handoffNotify)},
		{name: "handoff-poll-100ms", run: handoffWorkload(handoffPoll100ms)},
		{name: "handoff-poll-1s", run: handoffWorkload(handoffPoll1s)},
		{name: "propagation-100", run: propagationWorkload(100)},
		{name: "propagation-1000", run: propagationWorkload(1000)},
		{name: "monitor", run: monitorScale, optIn: true},
	}
}
