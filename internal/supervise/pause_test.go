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

// A holder (not its child) is frozen with SIGSTOP while one of its renewals
// is on its way, beyond its TTL; another run takes over. The late renewal
// reaches the server and is rejected and recorded as renew_rejected. The
// still-running child's fenced writes are refused from the takeover on.
// On SIGCONT the holder declares the lease lost (its monotonic deadline
// passed while frozen), terminates its child and exits 4; nothing is revived.
//
// The TTL is 2.7 s: the held renewal is sent RenewInterval (TTL/3, 900 ms)
// after the last and times out RenewTimeout (900 ms) later. The test sees it
// held 1 s after the last renewal, which leaves 800 ms to freeze the holder
// before the timeout; a 1.5 s TTL left 200 ms, which a loaded machine used
// up (the renewal timed out and never reached the server). A longer renew
// interval would leave the pool's connection idle for more than a second,
// and pgxpool would ping it first: the held request would be that ping.
func TestPausedOwnerZombie(t *testing.T) {
	const ttl = "2700ms"
	e := newEnv(t)
	proxy, viaProxy := pgtest.Proxied(t, e.db.URL)
	e.dumpOnFailure(t)
	env := recorderEnv(20 * time.Millisecond)
	a := e.leasetopEnv(t, env, runArgs("--dsn", viaProxy, "--ttl", ttl)...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	b := e.leasetopEnv(t, env, runArgs("--ttl", ttl, "--wait")...)
	pgtest.Eventually(t, 30*time.Second, "the second run to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })

	// Catch a renewal in flight, then freeze the holder. The first renewal on
	// a connection prepares the statement (a round trip of its own); wait for
	// it, so the held request is one that executes the renewal.
	pgtest.Eventually(t, 30*time.Second, "the holder's first renewal", func() bool {
		l := e.holder(t)
		return l.RunID == first.RunID && l.RenewedAt.After(l.AcquiredAt)
	})
	// The holder's listener (the holder watch) goes through the proxy too,
	// and pings now and then: a held request is a renewal only once one was
	// due, RenewInterval (TTL/3) after the last, and before the local
	// deadline (TTL - SafetyMargin, 2430 ms).
	renewed := e.holder(t).RenewedAt
	proxy.HoldRequests()
	pgtest.WaitServerPast(t, e.pool, renewed.Add(time.Second))
	pgtest.Eventually(t, 10*time.Second, "a renewal on its way", func() bool { return proxy.Held() > 0 })
	a.Signal(t, syscall.SIGSTOP)

	cs := e.waitChildren(t, 2, 30*time.Second)
	second := cs[1]
	pgtest.Eventually(t, 10*time.Second, "the frozen holder's child to be refused", func() bool {
		for _, r := range e.children(t)[0].Records {
			if r.Kind == proctest.KindRefused {
				return true
			}
		}
		return false
	})

	// Deliver the late renewal; the server refuses it and records it.
	proxy.Resume()
	var rejected data.Event
	pgtest.Eventually(t, 10*time.Second, "the late renewal to be rejected", func() bool {
		var ok bool
		rejected, ok = findEvent(e.events(t), func(ev data.Event) bool {
			return ev.Kind == data.KindRenewRejected && ev.RunID == first.RunID
		})
		return ok
	})
	if !strings.Contains(rejected.Reason, second.RunID.String()) {
		t.Errorf("renew_rejected reason = %q, want it to name the new holder %v", rejected.Reason, second.RunID)
	}

	a.Signal(t, syscall.SIGCONT)
	if got := a.Wait(t, 30*time.Second); got != 4 {
		t.Fatalf("zombie holder exit = %d, want 4 (lost); stderr: %s", got, a.Stderr.String())
	}
	if stderr := a.Stderr.String(); !strings.Contains(stderr, "lost") {
		t.Errorf("zombie holder stderr = %q, want it to say the lease was lost", stderr)
	}
	waitGone(t, first.PID, 10*time.Second, "the zombie's child")

	over, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindTakenOver })
	if !ok || over.PrevRunID != first.RunID || over.RunID != second.RunID {
		t.Fatalf("takeover = %+v, want %v -> %v", over, first.RunID, second.RunID)
	}
	zombie := e.children(t)[0]
	var refused int
	for _, r := range zombie.Records {
		switch {
		case r.Kind == proctest.KindWrite && !r.At.Before(over.At):
			t.Errorf("the zombie's child wrote with stale fence %d at %v, after the takeover at %v", r.Fence, r.At, over.At)
		case r.Kind == proctest.KindRefused:
			refused++
		}
	}
	if refused == 0 || !zombie.Stopped {
		t.Errorf("zombie child: %d refused writes, stopped %v; want refusals and a stop", refused, zombie.Stopped)
	}
	if got := e.holder(t); got.RunID != second.RunID {
		t.Errorf("holder = %v, want %v (nothing revived the zombie's lease)", got.RunID, second.RunID)
	}
	if second.Fence <= first.Fence {
		t.Errorf("fence %d after takeover, want > %d", second.Fence, first.Fence)
	}
	t.Logf("zombie: %d stale writes refused; cause: %s", refused, strings.TrimSpace(a.Stderr.String()))
}

// Pauses are what fences are for: the holder and its child are frozen
// together past the TTL (like a frozen VM). After resuming, the child runs on
// until its holder notices the loss; every write it attempts meanwhile is
// refused by the fence check, and it is terminated right after.
func TestPausedHolderAndChildFenced(t *testing.T) {
	e := newEnv(t)
	env := recorderEnv(5 * time.Millisecond)
	a := e.leasetopEnv(t, env, runArgs("--ttl", "1s")...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	b := e.leasetopEnv(t, env, runArgs("--ttl", "1s", "--wait")...)
	pgtest.Eventually(t, 30*time.Second, "the second run to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })

	a.Signal(t, syscall.SIGSTOP)
	if err := syscall.Kill(-first.PID, syscall.SIGSTOP); err != nil { // the child's own process group
		t.Fatalf("SIGSTOP child group: %v", err)
	}
	second := e.waitChildren(t, 2, 30*time.Second)[1]

	resumed := e.serverNow(t)
	if err := syscall.Kill(-first.PID, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT child group: %v", err)
	}
	a.Signal(t, syscall.SIGCONT)
	if got := a.Wait(t, 30*time.Second); got != 4 {
		t.Fatalf("paused holder exit = %d, want 4; stderr: %s", got, a.Stderr.String())
	}
	waitGone(t, first.PID, 10*time.Second, "the paused holder's child")

	over, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindTakenOver })
	if !ok || over.PrevRunID != first.RunID || over.RunID != second.RunID {
		t.Fatalf("takeover = %+v, want %v -> %v", over, first.RunID, second.RunID)
	}
	paused := e.children(t)[0]
	var after, refused int
	for _, r := range paused.Records {
		if r.At.Before(resumed) {
			continue
		}
		switch r.Kind {
		case proctest.KindWrite:
			t.Errorf("after resuming, the stale child's write with fence %d was accepted at %v", r.Fence, r.At)
		case proctest.KindRefused, proctest.KindError:
			refused++
		}
		after++
	}
	if refused == 0 || !paused.Stopped {
		t.Errorf("stale child after resume: %d attempts refused, stopped %v; want at least one refusal (its last attempt at SIGTERM) and a stop",
			refused, paused.Stopped)
	}
	t.Logf("window: the stale child ran %s (database clock) after SIGCONT, %d records, %d write attempts all refused",
		paused.End.Sub(resumed).Round(time.Millisecond), after, refused)
}
