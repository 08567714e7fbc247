package supervise_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// kill -9 of a holder: its child dies with it (its guardian kills it), and
// the waiting run takes over when the lease expires on the server, not
// before, with a higher fence.
func TestProcessLossKill9(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	env := recorderEnv(20 * time.Millisecond)
	a := e.leasetopEnv(t, env, runArgs("--ttl", "1s")...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	b := e.leasetopEnv(t, env, runArgs("--ttl", "1s", "--wait")...)
	pgtest.Eventually(t, 30*time.Second, "the second run to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })

	a.Signal(t, syscall.SIGKILL)
	if got := a.Wait(t, 30*time.Second); got != 128+9 {
		t.Fatalf("killed holder exit = %d, want 137", got)
	}
	waitGone(t, first.PID, 10*time.Second, "the killed holder's child")
	cs := e.waitChildren(t, 2, 30*time.Second)
	second := cs[1]

	evs := e.events(t)
	over, ok := findEvent(evs, func(ev data.Event) bool { return ev.Kind == data.KindTakenOver })
	if !ok {
		t.Fatalf("events = %+v, want a takeover", evs)
	}
	if over.PrevRunID != first.RunID || over.RunID != second.RunID {
		t.Errorf("takeover %v -> %v, want %v -> %v", over.PrevRunID, over.RunID, first.RunID, second.RunID)
	}
	if over.At.Before(over.PrevExpiresAt) {
		t.Errorf("taken over at %v, before the killed holder's expiry %v", over.At, over.PrevExpiresAt)
	}
	if second.Fence <= first.Fence {
		t.Errorf("fence after takeover %d, want > %d", second.Fence, first.Fence)
	}
	if !second.Start.After(first.End) {
		t.Errorf("second child started %v, before the first child's last record %v", second.Start, first.End)
	}
	t.Logf("handoff after kill -9: taken over %s after the expiry", over.At.Sub(over.PrevExpiresAt).Round(time.Millisecond))

	b.Signal(t, syscall.SIGTERM)
	if got := b.Wait(t, 30*time.Second); got != 0 {
		t.Errorf("second run exit = %d after SIGTERM (the recorder exits 0), want 0; stderr: %s", got, b.Stderr.String())
	}
	if got := e.holder(t); got.RunID != [16]byte{} {
		t.Errorf("lease still held by %v after the second run ended", got.RunID)
	}
}

// N runs wait on one key; holders are killed one after another. No two
// children ever run at the same time (on the database clock), fences rise,
// and no killed holder's child outlives it.
func TestNoOverlapUnderProcessLoss(t *testing.T) {
	const runs, kills = 4, 3
	e := newEnv(t)
	env := recorderEnv(15 * time.Millisecond)
	procs := map[int]*proctest.Process{}
	for range runs {
		p := e.leasetopEnv(t, env, runArgs("--ttl", "1s", "--wait")...)
		procs[p.PID()] = p
	}
	e.dumpOnFailure(t)
	for i := range kills {
		var c *proctest.Child
		pgtest.Eventually(t, 30*time.Second, "a child to run across a renewal of its lease", func() bool {
			cs := e.children(t)
			if len(cs) <= i {
				return false
			}
			c = cs[i]
			l := e.holder(t)
			return l.RunID == c.RunID && l.RenewedAt.After(l.AcquiredAt) && len(c.Records) >= 4
		})
		guardian, _ := proctest.ReadProc(c.PPID) // the child's parent is its run's guardian
		holder := procs[guardian.PPID]
		if holder == nil {
			t.Fatalf("child %v has parent %d whose parent %d is not one of the runs", c, c.PPID, guardian.PPID)
		}
		holder.Signal(t, syscall.SIGKILL)
		holder.Wait(t, 30*time.Second)
		waitGone(t, c.PID, 10*time.Second, "the killed holder's child")
		delete(procs, guardian.PPID)
	}
	e.waitChildren(t, kills+1, 30*time.Second)
	for _, p := range procs {
		p.Signal(t, syscall.SIGTERM)
	}
	for _, p := range procs {
		p.Wait(t, 30*time.Second)
	}

	cs := e.children(t)
	if len(cs) != kills+1 {
		t.Fatalf("%d children ran, want %d (waiting runs stopped by SIGTERM never start one)", len(cs), kills+1)
	}
	for i := 1; i < len(cs); i++ {
		prev, cur := cs[i-1], cs[i]
		if !cur.Start.After(prev.End) {
			t.Errorf("overlap: %v started before %v ended", cur, prev)
		}
		if cur.Fence <= prev.Fence {
			t.Errorf("fence did not rise: %v after %v", cur, prev)
		}
		if len(prev.Records) < 2 {
			t.Errorf("%v recorded %d rows, want it to have run", prev, len(prev.Records))
		}
		for _, r := range prev.Records {
			if r.Kind != proctest.KindStart && r.Kind != proctest.KindWrite {
				t.Errorf("%v recorded %q at %v: a killed holder's child wrote after losing the lease", prev, r.Kind, r.At)
			}
		}
	}
	if last := cs[len(cs)-1]; !last.Stopped {
		t.Errorf("the last holder's child %v did not record its stop after SIGTERM", last)
	}
	for _, c := range cs {
		t.Logf("%v", c)
	}
	for _, ev := range e.events(t) {
		if ev.Kind == data.KindTakenOver {
			t.Logf("takeover after kill -9: %s after the killed holder's expiry", ev.At.Sub(ev.PrevExpiresAt).Round(100*time.Microsecond))
		}
	}
}
