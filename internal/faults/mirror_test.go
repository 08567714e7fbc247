package faults_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// startMirror runs the monitor's headless model on the database at dsn (its
// own store, so its own connections) until the test ends, and waits until
// it is LIVE and has read the database once.
func (r *rig) startMirror(dsn string, cfg monitor.FeedConfig) *monitortest.Mirror {
	r.t.Helper()
	m := monitortest.NewMirror(pgtest.OpenStore(r.t, dsn, data.Options{}), cfg, monitor.Config{})
	r.runMirror(m, "the monitor to be LIVE")
	return m
}

// runMirror runs m until the test ends, and waits until it is LIVE and has
// read the database once.
func (r *rig) runMirror(m *monitortest.Mirror, what string) {
	r.t.Helper()
	r.runMirrorUntil(m, what, func(s *monitor.State) bool { return s.Synced() && live(s) })
}

// runMirrorUntil runs m until the test ends, and waits until ready.
func (r *rig) runMirrorUntil(m *monitortest.Mirror, what string, ready func(*monitor.State) bool) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	r.t.Cleanup(func() { cancel(); wg.Wait() })
	waitMirror(r.t, m, 30*time.Second, what, ready)
}

// live reports whether the monitor's header would say LIVE.
func live(s *monitor.State) bool { return s.Health(time.Now()).Link == monitor.LinkLive }

// waitMirror waits up to timeout for cond on the monitor's state.
func waitMirror(t *testing.T, m *monitortest.Mirror, timeout time.Duration, what string, cond func(*monitor.State) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := m.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v (monitor: %s)", what, err, describe(m))
	}
}

// describe summarises the monitor's state for failure messages.
func describe(m *monitortest.Mirror) string {
	var out string
	m.Read(func(s *monitor.State) {
		h := s.Health(time.Now())
		out = fmt.Sprintf("%s attempt %d err %v, %d leases, %d events applied, %d duplicates ignored, %d gaps, %d malformed",
			h.Link, h.Attempt, h.Err, s.Len(), s.Applied(), s.Duplicates(), s.Gaps(), s.Malformed())
	})
	return out
}

// converge waits until the monitor is LIVE and has applied every event now
// in the database, and returns the time since t0 (when the fault healed).
// The holders may go on meanwhile: later events are not waited for.
func (r *rig) converge(m *monitortest.Mirror, t0 time.Time) time.Duration {
	r.t.Helper()
	var baseline int64
	m.Read(func(s *monitor.State) { baseline = s.Baseline() })
	ids := r.eventIDs(baseline)
	waitMirror(r.t, m, 60*time.Second, fmt.Sprintf("the monitor to catch up with %d events", len(ids)), func(s *monitor.State) bool {
		return live(s) && seenAll(s, ids)
	})
	return time.Since(t0)
}

func seenAll(s *monitor.State, ids []int64) bool {
	for _, id := range ids {
		if !s.Seen(id) {
			return false
		}
	}
	return true
}

// audit checks the promises once every holder has stopped: the monitor's
// leases equal lease.session_lease, it applied every lease.event row after
// its baseline exactly once and its event log holds no id twice; and
// audit.Check finds no two unexpired owners of a session, no fence that did
// not rise, no accepted write outside its run's grant and no run that never
// ended. It returns the check's tally.
func (r *rig) audit(m *monitortest.Mirror) audit.Tally {
	r.t.Helper()
	r.mirrorsDB(m)
	return r.checkHistory()
}

// checkHistory runs audit.Check on the rig's history and record, failing
// the test for every violation, and returns the tally.
func (r *rig) checkHistory() audit.Tally {
	r.t.Helper()
	r.mu.Lock()
	res, err := audit.Check(context.Background(), r.store, r.rec)
	r.mu.Unlock()
	if err != nil {
		r.t.Fatalf("audit.Check: %v", err)
	}
	for _, v := range res.Violations {
		r.t.Errorf("invariant %d (%s) broken: %s", v.Invariant, v.Invariant, v)
	}
	return res.Tally
}

// mirrorsDB checks the monitor's half of audit: its leases equal
// lease.session_lease, it applied every lease.event row after its baseline
// exactly once and its event log holds no id twice.
func (r *rig) mirrorsDB(m *monitortest.Mirror) {
	r.t.Helper()
	r.mirrorsDBBut(m, 0)
}

// mirrorsDBBut is mirrorsDB for a monitor that also applied lost events the
// database no longer holds (a failover with asynchronous replication).
func (r *rig) mirrorsDBBut(m *monitortest.Mirror, lost int64) {
	r.t.Helper()
	want := r.leases()
	var diff string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, func(s *monitor.State) bool {
		diff = sameAsDB(s, want)
		return diff == ""
	}); err != nil {
		r.t.Fatalf("the monitor never equalled lease.session_lease: %s (monitor: %s)", diff, describe(m))
	}
	var baseline int64
	m.Read(func(s *monitor.State) { baseline = s.Baseline() })
	all := r.eventIDs(baseline)
	waitMirror(r.t, m, 30*time.Second, "every event to be applied", func(s *monitor.State) bool { return seenAll(s, all) })
	m.Read(func(s *monitor.State) {
		if got, want := s.Applied(), int64(len(all))+lost; got != want {
			r.t.Errorf("monitor applied %d events, the database has %d after its baseline %d (and %d lost ones were shown)", got, len(all), baseline, lost)
		}
		seen := map[int64]bool{}
		for _, ev := range s.Events() {
			if seen[ev.ID] {
				r.t.Errorf("event %d is twice in the monitor's log", ev.ID)
			}
			seen[ev.ID] = true
		}
	})
}

// sameAsDB says how the monitor's leases differ from want ("" when equal).
func sameAsDB(s *monitor.State, want map[data.Key]data.Lease) string {
	if s.Len() != len(want) {
		var extra []string
		for _, l := range s.Leases() {
			if _, ok := want[l.Key]; !ok {
				extra = append(extra, fmt.Sprintf("%v (run %s, fence %d, holder %q)", l.Key, l.RunID, l.Fence, l.Holder))
			}
		}
		return fmt.Sprintf("%d leases, the database has %d; shown, not in the database: %v", s.Len(), len(want), extra)
	}
	for k, w := range want {
		g, ok := s.Lease(k)
		if !ok || g.RunID != w.RunID || g.Fence != w.Fence || g.Holder != w.Holder ||
			!g.ExpiresAt.Equal(w.ExpiresAt) || !g.AcquiredAt.Equal(w.AcquiredAt) {
			return fmt.Sprintf("%v: run %s fence %d holder %q acquired %s expires %s (found %t), the database has run %s fence %d holder %q acquired %s expires %s",
				k, g.RunID, g.Fence, g.Holder, g.AcquiredAt.Format(time.RFC3339Nano), g.ExpiresAt.Format(time.RFC3339Nano), ok,
				w.RunID, w.Fence, w.Holder, w.AcquiredAt.Format(time.RFC3339Nano), w.ExpiresAt.Format(time.RFC3339Nano))
		}
	}
	return ""
}

// tallyKV is a tally as report key/values.
func tallyKV(t audit.Tally) []any {
	return []any{"runs", t.RunsStarted, "takeovers", t.Takeovers, "zombie_renewals_rejected", t.ZombieRenewalsRejected,
		"writes_accepted", t.WritesAccepted, "stale_writes_refused", t.StaleWritesRefused}
}
