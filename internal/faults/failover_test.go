package faults_test

import (
	"context"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// Fault: failover to a streaming standby. A primary of the test's own and a
// standby of it; holders (lease.Clients and `leasetop run` processes) and
// the monitor's feed reach whichever is the primary through a two-host DSN
// with target_session_attrs=read-write. The primary is stopped hard (as
// pg_ctl stop -m immediate) while they work, and the standby is promoted.
//
// With synchronous replication every promise holds across it: never two
// unexpired owners, fences strictly rising, every old holder renews on the
// new primary or stops before anyone else can own its session, the monitor
// converges.
func TestFailoverSynchronous(t *testing.T) { failover(t, true) }

// With asynchronous replication the promoted standby lacks what the old
// primary committed after the standby last caught up (here: the stream is
// cut first, so that the loss is certain): grants their holders were told
// about, and the fence sequence's advance. Fences still rise: the new
// primary's first grant moves the sequence past anything the old one could
// have handed out (lease.follow_failover). A lost grant's session can be
// granted again while its old holder still works until its next renewal is
// refused: the fence is what keeps the resource safe then.
func TestFailoverAsynchronous(t *testing.T) { failover(t, false) }

// failoverGap is how long there is no primary (an automated failover's
// detection and promotion). The holders of one crew have a lease of
// longTTL, which outlasts it: they renew on the new primary; the others'
// shortTTL does not: they reach their local deadline first and stop.
const (
	failoverGap = 1500 * time.Millisecond
	longTTL     = 4 * time.Second
	shortTTL    = time.Second
)

func failover(t *testing.T, synchronous bool) {
	ctx := context.Background()
	primary, standby, dsn := replicatedPair(t, synchronous)
	r := newRigOn(t, dsn, 6)
	m := r.startMirror(dsn, mirrorCfg())
	runA := r.leasetopRun(dsn, "run-a", "--ttl", longTTL.String())
	r.writing("run-a")
	long := r.startCrew(crewConfig{holders: 3, lease: crewTTL(longTTL), sticky: 2, name: "long"})
	short := r.startCrew(crewConfig{holders: 2, lease: crewTTL(shortTTL), name: "short"})
	runB := r.leasetopRun(dsn, "run-b", "--ttl", longTTL.String(), "--wait")
	r.waitRuns(t, 6)

	var lost lostGrant
	if !synchronous {
		if err := standby.Detach(ctx); err != nil {
			t.Fatal(err)
		}
		lost = r.grantUnreplicated(100)
		r.waitRuns(t, 2) // the holders' grants the standby never sees
	}

	stop := time.Now()
	primary.StopImmediate()
	stopped := time.Since(stop)
	time.Sleep(failoverGap - stopped) // the failover's length, not a wait for readiness
	promoteAt := time.Now()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	r.store = pgtest.OpenStore(t, dsn, data.Options{}) // the old pool's connections went with the old primary
	r.waitRuns(t, 1)
	firstRun := time.Since(promoted)
	converged := r.converge(m, promoted)
	r.waitRuns(t, 5)

	var again data.Grant
	if !synchronous {
		again = r.grantAgain(lost)
	}
	long.stop()
	short.stop()
	codeA, codeB := r.stopRun(runA), r.stopRun(runB)

	before := r.runsBefore(stop)
	rising := r.fencesRiseAcross(before, promoted, lost)
	renewed, gaveUp, overlaps := r.oldHolders(stop, promoted)
	lostRuns := r.forgetUnknownRuns()
	lostEvents, lostReleases := r.sameEvents(m)
	r.mirrorsDBBut(m, lostEvents)
	tally := r.checkHistory()
	kv := []any{"replication", map[bool]string{true: "synchronous", false: "asynchronous"}[synchronous],
		"stop_immediate_took", stopped, "no_primary_for", promoted.Sub(stop), "promotion_took", promoted.Sub(promoteAt),
		"first_run_on_new_primary_in", firstRun, "monitor_converged_in", converged,
		"old_holders_renewed_on_new_primary", renewed, "old_holders_stopped_before_next_owner", gaveUp,
		"granted_again_while_old_holder_worked", overlaps, "grants_lost", lostRuns, "lost_events_the_monitor_showed", lostEvents, "of_them_releases", lostReleases,
		"fences_checked_rising", rising, "run_a_exit", codeA, "run_b_exit", codeB}
	if synchronous {
		// The library's release commits without waiting for its flush (a
		// lost release only lets its lease expire), so one made just
		// before the stop may be lost even here; nothing else may.
		if lostRuns != 0 || overlaps != 0 || lostEvents != lostReleases {
			t.Errorf("with synchronous replication %d acknowledged grants and %d events other than releases were lost, and %d sessions granted again while their old holder worked, want none",
				lostRuns, lostEvents-lostReleases, overlaps)
		}
	} else {
		if again.Fence <= lost.fence {
			t.Errorf("the lost grant's session %s was granted again on the new primary with fence %d, want above the lost grant's %d",
				lost.key, again.Fence, lost.fence)
		}
		kv = append(kv, "lost_fence", lost.fence, "fence_after_failover", again.Fence)
	}
	report(t, "failover", append(kv, tallyKV(tally)...)...)
}

// replicatedPair starts a primary of the test's own (the package's server is
// shared and not to be stopped hard) with a migrated database and the
// demo's output table, and a streaming standby of it, synchronous or not.
// It returns them and the database's two-host DSN with
// target_session_attrs=read-write: whichever of the two accepts writes.
func replicatedPair(t *testing.T, synchronous bool) (primary, standby *pgserver.Server, dsn string) {
	t.Helper()
	ctx := context.Background()
	// Commits wait for their WAL flush, as in production (the throwaway
	// server's default is synchronous_commit = off).
	primary, err := pgserver.Start(ctx, pgserver.Options{Settings: map[string]string{"synchronous_commit": "on"}})
	if err != nil {
		t.Fatalf("start the primary: %v", err)
	}
	t.Cleanup(primary.Close)
	direct, err := pgserver.CreateMigrated(ctx, primary.URL("postgres"), "failover")
	if err != nil {
		t.Fatal(err)
	}
	standby, err = primary.StartStandby(ctx, pgserver.StandbyOptions{})
	if err != nil {
		t.Fatalf("start the standby: %v", err)
	}
	t.Cleanup(standby.Close)
	if synchronous {
		if err := primary.Synchronous(ctx, "leasetop_standby"); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = u.Host + ",127.0.0.1:" + strconv.Itoa(standby.Port())
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return primary, standby, u.String()
}

// lostGrant is a grant the old primary made after the standby stopped
// streaming: the new primary never hears of it.
type lostGrant struct {
	key   data.Key
	run   uuid.UUID
	fence int64
}

// grantUnreplicated draws n fences on a scratch session (takeovers of its
// expired lease), then grants another session for an hour and returns that
// grant: the old primary's fence sequence is then well past what the
// standby has (a sequence logs 32 values ahead in WAL).
func (r *rig) grantUnreplicated(n int) lostGrant {
	r.t.Helper()
	for range n {
		r.exec(`SELECT lease.acquire($1, 'burn', gen_random_uuid(), '1 millisecond', 'burner')`, account)
	}
	g := lostGrant{key: data.Key{Account: account, Session: "lost"}, run: uuid.New()}
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT fence FROM lease.acquire($1, $2, $3, '1 hour', 'lost')`,
		g.key.Account, g.key.Session, g.run).Scan(&g.fence); err != nil {
		r.t.Fatalf("acquire %s: %v", g.key, err)
	}
	return g
}

// grantAgain acquires the lost grant's session on the new primary, where it
// is free, for another run, and releases it.
func (r *rig) grantAgain(g lostGrant) data.Grant {
	r.t.Helper()
	ctx := context.Background()
	run := uuid.New()
	got, err := r.store.Acquire(ctx, g.key, run, time.Minute, "after-failover")
	if err != nil {
		r.t.Fatalf("acquire %s on the new primary: %v", g.key, err)
	}
	if _, err := r.store.Release(ctx, g.key, run); err != nil {
		r.t.Fatalf("release %s: %v", g.key, err)
	}
	return got
}

// stopRun stops a `leasetop run` with SIGTERM if it still runs, and returns
// its exit code: its command's (the writer exits 0 on SIGTERM) when it held
// on, the interrupted code while it waited, 4 when it lost its lease. A
// failure (1, or a command that failed) is an error.
func (r *rig) stopRun(p *proc) int {
	r.t.Helper()
	if !p.Exited() {
		p.Signal(r.t, syscall.SIGTERM)
	}
	code := p.wait(r.t)
	if code != 0 && code != 4 && code != 130 && code != 143 {
		r.t.Errorf("leasetop run exited %d, want 0 (its command stopped on SIGTERM), 4 (lease lost) or interrupted; stderr: %s", code, p.Stderr.String())
	}
	return code
}

// runsBefore returns the runs the holders started before t0.
func (r *rig) runsBefore(t0 time.Time) map[uuid.UUID]audit.StartedRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[uuid.UUID]audit.StartedRun{}
	for run, s := range r.rec.Started {
		if r.startedAt[run].Before(t0) {
			out[run] = s
		}
	}
	return out
}

// fencesRiseAcross checks that every fence the new primary granted (its
// acquired and taken_over events after promoted) is above every fence the
// holders were told before the failover on the same session, the lost
// grant's included, and returns how many new fences it compared.
func (r *rig) fencesRiseAcross(before map[uuid.UUID]audit.StartedRun, promoted time.Time, lost lostGrant) int {
	r.t.Helper()
	highest := map[data.Key]int64{}
	for _, s := range before {
		highest[s.Key] = max(highest[s.Key], s.Fence)
	}
	if lost.fence > 0 {
		highest[lost.key] = max(highest[lost.key], lost.fence)
	}
	n := 0
	for _, ev := range r.events() {
		if (ev.Kind != data.KindAcquired && ev.Kind != data.KindTakenOver) || !ev.At.After(promoted) {
			continue
		}
		n++
		if ev.Fence <= highest[ev.Key] {
			r.t.Errorf("%s: the new primary granted fence %d (event %d), but a holder was told fence %d before the failover",
				ev.Key, ev.Fence, ev.ID, highest[ev.Key])
		}
	}
	if n == 0 {
		r.t.Error("the new primary granted nothing: no fence to compare")
	}
	return n
}

// oldHolders sorts the runs the holders held when the primary stopped:
// renewed (it released its lease on the new primary, so it held it there),
// or stopped (lost, or its work ended while there was no primary), and then
// whether it stopped working before the new primary granted its session to
// anyone else. It returns the counts; overlaps are the stopped runs whose
// session was granted again before their holder stopped.
func (r *rig) oldHolders(stop, promoted time.Time) (renewed, stopped, overlaps int) {
	r.t.Helper()
	next := map[data.Key][]data.Event{}
	releasedAfter := map[uuid.UUID]bool{}
	for _, ev := range r.events() {
		switch {
		case !ev.At.After(promoted):
		case ev.Kind == data.KindAcquired || ev.Kind == data.KindTakenOver:
			next[ev.Key] = append(next[ev.Key], ev)
		case ev.Kind == data.KindReleased:
			releasedAfter[ev.RunID] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for run, s := range r.rec.Started { // the record and the events hold public run ids
		end, ended := r.stoppedAt[run]
		if !r.startedAt[run].Before(stop) || (ended && end.Before(stop)) {
			continue // not held when the primary stopped
		}
		if releasedAfter[run] {
			renewed++
			continue
		}
		stopped++
		for _, ev := range next[s.Key] {
			if ev.RunID == run {
				continue
			}
			if !ended || !end.Before(ev.At) {
				overlaps++
				r.t.Logf("%s: run %v (fence %d) was granted again to %v (fence %d) at %s, before its holder %s stopped (%s)",
					s.Key, run, s.Fence, ev.RunID, ev.Fence, ev.At.Format("15:04:05.000"), s.Holder, end.Format("15:04:05.000"))
			}
			break
		}
	}
	return renewed, stopped - overlaps, overlaps
}

// forgetUnknownRuns removes from the record the runs the holders believed
// they held but the database (the new primary) never granted: the grants
// lost with asynchronous replication. It returns how many.
func (r *rig) forgetUnknownRuns() int {
	r.t.Helper()
	known := map[uuid.UUID]bool{}
	for _, ev := range r.events() {
		known[ev.RunID] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for run := range r.rec.Started {
		if !known[run] { // the record holds public run ids
			delete(r.rec.Started, run)
			delete(r.rec.Ended, run)
			n++
		}
	}
	return n
}

// sameEvents checks that every event the monitor's log holds and the
// database holds is the database's event with that id: an id the new
// primary gave to another transition than the monitor showed would be a
// wrong picture. It returns how many events the monitor shows that the
// database does not hold (the old primary's lost ones), and how many of
// those are releases.
func (r *rig) sameEvents(m *monitortest.Mirror) (lost, lostReleases int64) {
	r.t.Helper()
	db := map[int64]data.Event{}
	for _, ev := range r.events() {
		db[ev.ID] = ev
	}
	m.Read(func(s *monitor.State) {
		for _, ev := range s.Events() {
			want, ok := db[ev.ID]
			switch {
			case !ok:
				lost++
				if ev.Kind == data.KindReleased {
					lostReleases++
				}
			case want.Kind != ev.Kind || want.Key != ev.Key || want.RunID != ev.RunID || want.Fence != ev.Fence:
				r.t.Errorf("the monitor shows event %d as %s %s fence %d, the database has %s %s fence %d",
					ev.ID, ev.Kind, ev.Key, ev.Fence, want.Kind, want.Key, want.Fence)
			}
		}
	})
	return lost, lostReleases
}
