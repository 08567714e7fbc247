package bench

import (
	"context"
	"strings"
)

// workload is one named measurement. It reports one or more Results.
type workload struct {
	name string
	desc string
	// loop makes a closed-loop workload; run is any other kind.
	loop func(r *run) loop
	run  func(ctx context.Context, r *run, w workload) ([]Result, error)
	// set names the closed-loop workloads that run interleaved (see runSet):
	// those compared with each other.
	set string
	// optIn workloads run only when named in Config.Only.
	optIn bool
}

// group is the name's part before the first '-': "handoff" selects
// handoff-notify, handoff-poll-100ms and handoff-poll-1s.
func (w workload) group() string {
	g, _, _ := strings.Cut(w.name, "-")
	return g
}

// workloads returns every workload in the order they run: each measurement
// next to (or interleaved with) the baseline it is compared with.
func workloads() []workload {
	var out []workload
	for _, w := range mainWorkloads() {
		out = append(out, w)
		if w.name == "v1-cycle" { // the floor and the staircase between the seed's cycle and leasetop's
			out = append(out, stairWorkloads()...)
		}
	}
	return out
}

// mainWorkloads are the workloads but the lean floor's staircase.
func mainWorkloads() []workload {
	return []workload{
		{name: "select1", set: "acquire", loop: selectOne, desc: "SELECT 1: the round-trip floor"},
		{name: "advisory", set: "acquire", loop: advisory, desc: "pg_try_advisory_xact_lock on the client's own keys (what people use instead)"},
		{name: "upsert", set: "acquire", loop: plainUpsert, desc: "plain PK UPSERT (acquire's statement) on a copy of the table without trigger"},
		{name: "acquire-notrigger", set: "acquire", loop: acquireNoTrigger, desc: "lease.acquire's code on the copy without trigger (no event row, no NOTIFY)"},
		{name: "acquire-eventonly", set: "acquire", loop: acquireEventOnly, desc: "lease.acquire's code on a copy whose trigger writes the event row but does not NOTIFY"},
		{name: "acquire", set: "acquire", loop: acquire, desc: "lease.acquire as the library makes it, uncontended: takes over the client's own expired keys (event row; the notification after the commit)"},
		{name: "upsert-contended", set: "contended", loop: upsertContended, desc: "the UPSERT on one key held by another run, all clients at once"},
		{name: "acquire-contended", set: "contended", loop: acquireContended, desc: "lease.acquire on one key held by another run, all clients at once"},
		{name: "seed-cycle", set: "cycle", loop: seedCycle},
		{name: "v1-cycle", set: "cycle", loop: v1Cycle, optIn: true},
		{name: "cycle", set: "cycle", loop: cycle},
		{name: "cycle-plain", set: "cycle", loop: plainCycle, desc: "lease.acquire of a free key + lease.release as plain statements, each committing with the trigger's NOTIFY (what a SQL caller got before acquire_quiet)"},
		{name: "cycle-sql", set: "cycle", loop: sqlCallerQuiet, desc: "a SQL caller's post-commit path: lease.acquire_quiet, lease.notify_event, lease.release_quiet, lease.notify_event, each statement its own transaction"},
		{name: "seed-renew", set: "renew", loop: seedRenew, desc: "the seed's per-key UPDATE ... WHERE key AND run_id AND unexpired on the seed's table"},
		{name: "renew-notrigger", set: "renew", loop: renewNoTrigger, desc: "lease.renew's code on the copy without trigger"},
		{name: "renew", set: "renew", loop: renew, desc: "lease.renew (renewals do not NOTIFY by default)"},
		{name: "renew-limited", set: "renew", loop: renewLimited, desc: renewLimitDesc},
		{name: "renew-notify", run: renewNotify},
		{name: "keepalive", run: keepAlive},
		{name: "handoff-notify", run: handoffWorkload(handoffNotify)},
		{name: "handoff-poll-100ms", run: handoffWorkload(handoffPoll100ms)},
		{name: "handoff-poll-1s", run: handoffWorkload(handoffPoll1s)},
		{name: "forcestop-notify", run: forceStopWorkload(0)},
		{name: "forcestop-poll", run: forceStopWorkload(pollEvery)},
		{name: "takeover", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runTakeover(ctx, w) }},
		{name: "preempt", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runPreempt(ctx, w) }},
		{name: "propagation-100", run: propagationWorkload(100)},
		{name: "propagation-1000", run: propagationWorkload(1000)},
		{name: "propagation-poll-1000", run: pollPropagationWorkload(1000, pollEvery)},
		{name: "pooler", run: poolerCycles, optIn: true},
		{name: "poll-cost", run: pollCost, optIn: true},
		{name: "listen-cost", run: listenCost, optIn: true},
		{name: "monitor", run: monitorScale, optIn: true},
		{name: "idle-cost", run: idleCost, optIn: true},
		{name: "monitor-contexts", run: monitorContextsScale, optIn: true},
		{name: "timeline", run: timelineScale, optIn: true},
		{name: "exporter", run: exporterScale, optIn: true},
		{name: "keepalive-scale", run: keepAliveScale, optIn: true},
		{name: "queue", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runQueue(ctx, w) }, optIn: true},
		{name: "handover", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runHandover(ctx, w) }, optIn: true},
		{name: "inbox", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runInbox(ctx, w) }, optIn: true},
		{name: "history-month", run: historyMonth, optIn: true},
		{name: "limits-cycle-free", set: "limits", loop: limitsCycleFree, desc: limitsFreeDesc, optIn: true},
		{name: "limits-cycle", set: "limits", loop: limitsCycle, desc: limitsCycleDesc, optIn: true},
		{name: "limits-hammer", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runLimitsHammer(ctx, w) }, optIn: true},
		{name: "limits-hammer-wait", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runLimitsHammerWait(ctx, w) }, optIn: true},
		{name: "limits-fair", run: func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runLimitsFair(ctx, w) }, optIn: true},
	}
}

// member returns w as a member of an interleaved set.
func (w workload) member(r *run) *member {
	l := w.loop(r)
	if len(l.rows) == 0 {
		l.rows = []row{{name: w.name, desc: w.desc}}
	}
	return &member{w: w, l: l}
}
