package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// The limits under faults (issue 40, point 2): the rig's account gets a
// limit of live runs, and `leasetop run` processes contend for more of its
// sessions than it has slots while a fault hits them. After each fault the
// account never had more holders than its limit at any instant on the
// database clock (audit.PeakHolders over lease.event and the lease rows of
// the server that survived), and audit.Check finds no accepted write outside
// its run's grant, nor from a run that held its session without a slot.
// Patroni's case is TestPatroniFailover's sync-kill-limit.

// setLimit gives the rig's account a limit of n live runs, as lease_admin
// would (`leasetop limit set`).
func (r *rig) setLimit(n int) {
	r.t.Helper()
	if _, err := r.store.SetLimit(context.Background(), account, "", n); err != nil {
		r.t.Fatalf("SetLimit(%s, %d): %v", account, n, err)
	}
}

// slotPeak fails the test if the account ever had more holders than limit
// at one instant, and returns the count (once every holder has stopped).
func (r *rig) slotPeak(limit int) audit.Peak {
	r.t.Helper()
	p, err := audit.PeakHolders(context.Background(), r.store, account)
	if err != nil {
		r.t.Fatalf("PeakHolders: %v", err)
	}
	if p.Most > limit {
		r.t.Errorf("%d runs held sessions of %s at %s under a limit of %d", p.Most, account, clock(p.At), limit)
	}
	return p
}

// clock formats a database timestamp to the millisecond.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// grantsAfter counts the grants of the rig's account after event id after.
func (r *rig) grantsAfter(after int64) int {
	r.t.Helper()
	var n int
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM lease.event
		WHERE id > $1 AND account_id = $2 AND kind::text IN ('acquired', 'taken_over', 'preempted', 'handed_over')`,
		after, account).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// granting waits until the account has had n grants after event id after.
func (r *rig) granting(after int64, n int, what string) {
	r.t.Helper()
	pgtest.Eventually(r.t, 60*time.Second, fmt.Sprintf("%d grants %s", n, what), func() bool { return r.grantsAfter(after) >= n })
}

// lapsed waits until no lease of the account is unexpired on the database
// clock.
func (r *rig) lapsed() {
	r.t.Helper()
	pgtest.Eventually(r.t, 60*time.Second, "every lease of the account to expire", func() bool {
		var n int
		if err := r.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM lease.session_lease
			WHERE account_id = $1 AND expires_at > clock_timestamp()`, account).Scan(&n); err != nil {
			r.t.Fatal(err)
		}
		return n == 0
	})
}

// endLeftovers force-releases, once every holder has stopped, the leases
// their runs left: a run that lost its connection (or found its lease lost
// while the database was out of reach) exits without a release that could
// reach it, and its row stays until it expires. endLeftovers waits for
// those expiries on the database clock, then force-releases the rows (an
// operator's `leasetop release --force`), which ends their grants in the
// history, so that audit.Check's invariant 4 judges only the runs that
// should have ended by themselves.
func (r *rig) endLeftovers() int {
	r.t.Helper()
	r.lapsed()
	var n int
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE lease.force_release(account_id, session_id, NULL, 'the test ends'))
		FROM lease.session_lease WHERE account_id = $1`, account).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// devices are `leasetop run` processes started one after another by each of
// a few device loops, on sessions picked at random: each waits for its
// session and a slot (--wait), writes through the fence check for hold,
// releases and exits, and the loop starts the next.
type devices struct {
	r        *rig
	stopping chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	runs     int
	codes    map[int]int // exit code → runs
}

// startDevices starts n device loops whose runs reach the database through
// dsn with the TTL ttl and any further flags. Stop them with stop.
func (r *rig) startDevices(n int, dsn string, ttl, hold time.Duration, flags ...string) *devices {
	d := &devices{r: r, stopping: make(chan struct{}), codes: map[int]int{}}
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 40))
		d.wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-d.stopping:
					return
				default:
				}
				label := fmt.Sprintf("dev-%d-%d", i, k)
				key := r.keys[rng.IntN(len(r.keys))]
				p := r.leasetopRunOn(dsn, key, label, writerFor(hold),
					append([]string{"--wait", "--ttl", ttl.String(), "--grace", "1s"}, flags...)...)
				code := d.await(p, label)
				d.mu.Lock()
				d.runs++
				d.codes[code]++
				d.mu.Unlock()
				if code != 0 { // the database was out of reach: pace the next one
					select {
					case <-d.stopping:
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
		})
	}
	r.t.Cleanup(d.stop)
	return d
}

// await waits for p to exit; once the devices stop, it sends p SIGTERM (a
// waiting run gives up, a holding one stops its command and releases), and
// SIGKILL if it has not exited 30 s later (recorded as a kill).
func (d *devices) await(p *proc, label string) int {
	select {
	case <-p.Done():
		return p.Code()
	case <-d.stopping:
	}
	_ = syscall.Kill(p.PID(), syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		d.r.killed(label)
		_ = syscall.Kill(p.PID(), syscall.SIGKILL)
		<-p.Done()
	}
	return p.Code()
}

// stop ends the device loops and waits for their last runs to exit.
func (d *devices) stop() {
	select {
	case <-d.stopping:
	default:
		close(d.stopping)
	}
	d.wg.Wait()
}

// String says how the devices' runs exited.
func (d *devices) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("%d runs, exit codes %v", d.runs, d.codes)
}

// checkSlots is what every test below checks once its holders stopped: the
// peak against the limit, the slots full at least once (the test contended),
// a refusal at the limit, and audit.Check (which fails the test for every
// violation) with an accepted write.
func (r *rig) checkSlots(limit int) (audit.Peak, audit.Tally) {
	r.t.Helper()
	left := r.endLeftovers()
	peak := r.slotPeak(limit)
	if peak.Most < limit {
		r.t.Errorf("at most %d runs held sessions of %s at once, fewer than its limit of %d: the test never filled the slots", peak.Most, account, limit)
	}
	tally := r.checkHistory()
	if tally.LimitRefusals == 0 || tally.WritesAccepted == 0 {
		r.t.Errorf("%d refusals at the limit and %d accepted writes: want runs that waited for a slot and runs that wrote", tally.LimitRefusals, tally.WritesAccepted)
	}
	r.t.Logf("%d leases left expired by their runs, force-released at the end", left)
	return peak, tally
}

// TestSlotHolderFrozen: under a limit of 1, a `leasetop run` holding the
// account's only slot is frozen with SIGSTOP past its TTL while its command
// keeps writing, and another run waits for the slot on another session.
// The waiter is granted the slot at the frozen lease's expiry on the
// database clock, not before; the frozen holder's command is refused by the
// fence check from then on; on SIGCONT the holder finds its lease lost,
// stops its command and exits 4. Never two holders.
func TestSlotHolderFrozen(t *testing.T) {
	r := newRig(t, 2)
	r.setLimit(1)
	a := r.leasetopRunOn(r.url, r.keys[0], "proc-a", nil, "--ttl", "1s")
	r.writing("proc-a")
	first := r.leaseHeld(r.keys[0], "proc-a")
	b := r.leasetopRunOn(r.url, r.keys[1], "proc-b", nil, "--ttl", "1s", "--wait")
	pgtest.Eventually(t, 30*time.Second, "proc-b to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })
	if got := r.eventsOf(data.KindLimitRefused, r.keys[1]); len(got) == 0 {
		t.Fatalf("proc-b waits (%s) but no limit_refused event names its session: it should wait for the slot", b.Stderr.String())
	}

	a.Signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	r.mu.Lock()
	r.rec.Frozen["proc-a"] = true
	r.rec.Freezes++
	r.mu.Unlock()
	second := r.leaseHeld(r.keys[1], "proc-b")
	shown := time.Since(frozen)
	pgtest.Eventually(t, 30*time.Second, "the frozen holder's command to be refused", func() bool { return r.writes("proc-a", false) > 0 })
	expired, ok := r.leases()[r.keys[0]]
	if !ok || expired.RunID != first.RunID {
		t.Fatalf("session %s after the freeze: %+v, want proc-a's expired lease (run %v)", r.keys[0], expired, first.RunID)
	}
	var grant data.Event
	for _, ev := range r.eventsOf(data.KindAcquired, r.keys[1]) {
		if ev.RunID == second.RunID {
			grant = ev
		}
	}
	if grant.ID == 0 || grant.At.Before(expired.ExpiresAt) || !strings.Contains(grant.Reason, "slot 1") {
		t.Errorf("proc-b's grant %+v: want slot 1, at or after proc-a's expiry %s on the database clock", grant, clock(expired.ExpiresAt))
	}
	a.Signal(t, syscall.SIGCONT)
	if got := a.wait(t); got != 4 {
		t.Errorf("frozen holder exit after SIGCONT = %d, want 4 (lost); stderr: %s", got, a.Stderr.String())
	}
	r.writing("proc-b")
	b.Signal(t, syscall.SIGTERM)
	if got := b.wait(t); got != 0 {
		t.Errorf("proc-b exit after SIGTERM = %d, want 0; stderr: %s", got, b.Stderr.String())
	}
	peak, tally := r.checkSlots(1)
	if tally.StaleWritesRefused == 0 {
		t.Error("no stale write was refused; want the frozen holder's command refused")
	}
	report(t, "slot-holder-sigstop", append([]any{"limit", 1, "ttl", time.Second, "slot_granted_after_expiry_by", grant.At.Sub(expired.ExpiresAt),
		"waiter_held_in", shown, "peak_holders", peak.Most, "limit_refusals", tally.LimitRefusals}, tallyKV(tally)...)...)
}

// leaseHeld waits until holder holds key, and returns its lease.
func (r *rig) leaseHeld(key data.Key, holder string) data.Lease {
	r.t.Helper()
	var l data.Lease
	pgtest.Eventually(r.t, 30*time.Second, holder+" to hold "+key.Session, func() bool {
		var ok bool
		l, ok = r.leases()[key]
		return ok && l.Holder == holder
	})
	return l
}

// eventsOf returns key's events of kind, oldest first.
func (r *rig) eventsOf(kind data.Kind, key data.Key) []data.Event {
	r.t.Helper()
	var out []data.Event
	for _, ev := range r.events() {
		if ev.Kind == kind && ev.Key == key {
			out = append(out, ev)
		}
	}
	return out
}

// slotHolderApp is the application_name of the devices' connections, so a
// test can find their backends.
const slotHolderApp = "slot_holder"

// TestSlotsAcrossBackendKills: under a limit of 2, four device loops run
// `leasetop run` processes (TTL 1 s) on six sessions; three times, once the
// account has granted a few more runs, every backend of the devices (their
// pools' and their listeners') is terminated. The runs reconnect and renew,
// or lose their lease at its expiry and a waiter takes the slot.
func TestSlotsAcrossBackendKills(t *testing.T) {
	const limit = 2
	r := newRig(t, 6)
	r.setLimit(limit)
	d := r.startDevices(4, r.url+"&application_name="+slotHolderApp, time.Second, 300*time.Millisecond)
	r.granting(0, 3, "before the first kill")
	kills, backends := scale(3, 10), 0
	for n := range kills {
		last := r.lastEventID()
		killed := r.terminate(slotHolderApp, "leasetop listener")
		if killed == 0 {
			t.Fatalf("kill %d: no backend of the devices to terminate", n)
		}
		backends += killed
		r.granting(last, 3, fmt.Sprintf("after kill %d", n))
	}
	d.stop()
	peak, tally := r.checkSlots(limit)
	report(t, "slots-backend-kill", append([]any{"limit", limit, "kills", kills, "backends_terminated", backends,
		"devices", d.String(), "peak_holders", peak.Most, "holds", peak.Runs, "limit_refusals", tally.LimitRefusals}, tallyKV(tally)...)...)
}

// TestSlotsAcrossPoolerRestart: under a limit of 2, four device loops run
// `leasetop run` processes (TTL 1 s) through PgBouncer in transaction mode
// (polling: no LISTEN through the pooler) on six sessions. PgBouncer is
// stopped until every lease of the account has expired on the database
// clock (the holders cannot renew: their slots free at expiry), then
// started again; the devices reconnect and the account grants again.
func TestSlotsAcrossPoolerRestart(t *testing.T) {
	const limit = 2
	r := newRig(t, 6)
	r.setLimit(limit)
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 8})
	via, err := b.Via(r.url)
	if err != nil {
		t.Fatal(err)
	}
	d := r.startDevices(4, via, time.Second, 300*time.Millisecond, "--poll", "100ms")
	r.granting(0, 3, "before the restart")
	last := r.lastEventID()
	b.Stop()
	down := time.Now()
	r.lapsed()
	lapsed := time.Since(down)
	if err := b.Restart(context.Background()); err != nil {
		t.Fatalf("restart PgBouncer: %v", err)
	}
	up := time.Now()
	r.granting(last, 3, "after the restart")
	again := time.Since(up)
	d.stop()
	peak, tally := r.checkSlots(limit)
	report(t, "slots-pooler-restart", append([]any{"limit", limit, "leases_lapsed_in", lapsed, "three_grants_after_restart_in", again,
		"devices", d.String(), "peak_holders", peak.Most, "holds", peak.Runs, "limit_refusals", tally.LimitRefusals}, tallyKV(tally)...)...)
}
