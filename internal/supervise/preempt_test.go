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

// TestRunPreempted: a second `leasetop run --on-busy preempt` takes the
// session from a running one. The first stops its command by today's signal
// rules (SIGTERM: the recorder records its stop) and exits 4 with one line
// naming the preemptor (label, public run id, reason); no write of its
// command passes the fence check after the preempt; the preemptor's command
// runs with a higher fence.
func TestRunPreempted(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	a := e.leasetopEnv(t, recorderEnv(20*time.Millisecond), runArgs("--ttl", "3s", "--holder", "desktop", "--attachment", "stream-7")...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	b := e.leasetopEnv(t, recorderEnv(20*time.Millisecond),
		runArgs("--ttl", "3s", "--holder", "phone", "--on-busy", "preempt", "--reason", "moved to the phone")...)
	if got := a.Wait(t, time.Minute); got != 4 {
		t.Fatalf("the preempted run exited %d, want 4; stderr: %s", got, a.Stderr.String())
	}
	ev, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindPreempted })
	if !ok {
		t.Fatal("no preempted event")
	}
	if ev.PrevRunID != first.RunID || ev.Holder != "phone" || ev.PrevHolder != "desktop" || ev.Reason != "moved to the phone" {
		t.Errorf("preempted event = %+v, want the first run replaced by phone with the reason", ev)
	}
	t.Logf("the preempted run's stderr: %s", a.Stderr.String())
	var named []string
	for _, line := range strings.Split(strings.TrimSpace(a.Stderr.String()), "\n") {
		if strings.Contains(line, "preempted") {
			named = append(named, line)
		}
	}
	if len(named) != 1 || !strings.Contains(named[0], ev.RunID.String()) || !strings.Contains(named[0], `"phone"`) ||
		!strings.Contains(named[0], `"moved to the phone"`) {
		t.Errorf("the preempted run's lines about it = %q, want one naming run %s, \"phone\" and the reason", named, ev.RunID)
	}
	second := e.waitChildren(t, 2, 30*time.Second)[1]
	t.Logf("the preemptor's command started %s after the preempt, %s after the old command's last record",
		second.Start.Sub(ev.At).Round(time.Millisecond), second.Start.Sub(e.children(t)[0].End).Round(time.Millisecond))
	if second.RunID != ev.RunID || second.Fence <= first.Fence {
		t.Errorf("the preemptor's command runs as %v fence %d, want %v with a fence above %d", second.RunID, second.Fence, ev.RunID, first.Fence)
	}
	if err := b.Stderr.String(); !strings.Contains(err, "preempting: lease") || !strings.Contains(err, `attachment "stream-7"`) ||
		!strings.Contains(err, first.RunID.String()) {
		t.Errorf("the preemptor's stderr = %q, want the run it preempts and its attachment", err)
	}
	for _, c := range e.children(t) {
		if c.RunID != first.RunID {
			continue
		}
		if !c.Stopped {
			t.Errorf("the preempted command did not record its stop (SIGTERM): %v", c)
		}
		for _, r := range c.Records {
			if r.Kind == "write" && r.At.After(ev.At) {
				t.Errorf("the preempted command's write at %v passed the fence check after the preempt at %v", r.At, ev.At)
			}
		}
	}
	b.Signal(t, syscall.SIGTERM)
	b.Wait(t, time.Minute)
}

// TestRunNotPreemptibleIsRefused: `--on-busy preempt` against a run that
// declared --not-preemptible exits 3 with one line saying so; the holder
// keeps running with its fence, and nothing is recorded.
func TestRunNotPreemptibleIsRefused(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	a := e.leasetopEnv(t, recorderEnv(20*time.Millisecond), runArgs("--ttl", "3s", "--holder", "checkout", "--not-preemptible")...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	b := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "preempt", "--", "sh", "-c", "echo ran")
	if got := b.Wait(t, time.Minute); got != 3 {
		t.Fatalf("preempt of a not-preemptible run exited %d, want 3; stderr: %s", got, b.Stderr.String())
	}
	if err := b.Stderr.String(); strings.Count(err, "\n") != 1 || !strings.Contains(err, "not preemptible") || !strings.Contains(err, `"checkout"`) {
		t.Errorf("stderr = %q, want one line saying the holder checkout is not preemptible", err)
	}
	if out := b.Stdout.String(); out != "" {
		t.Errorf("the refused run ran its command: %q", out)
	}
	if h := e.holder(t); h.RunID != first.RunID || h.Fence != first.Fence || a.Exited() {
		t.Errorf("holder after the refusal = %v fence %d (first exited %v), want the first run %v fence %d still running",
			h.RunID, h.Fence, a.Exited(), first.RunID, first.Fence)
	}
	if _, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindPreempted }); ok {
		t.Error("the refused preempt wrote a preempted event")
	}
}

// TestRunPreemptNeedsTheRole: a login in lease_app but not lease_preempt
// cannot preempt from the command line: one line naming the role, exit 1,
// and the holder keeps the lease.
func TestRunPreemptNeedsTheRole(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	a := e.leasetopEnv(t, recorderEnv(20*time.Millisecond), runArgs("--ttl", "3s")...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	dsn, _ := pgtest.Login(t, e.db, "lease_app")
	b := e.leasetopEnv(t, []string{"DATABASE_URL=" + dsn},
		"run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "preempt", "--", "sh", "-c", "echo ran")
	if got := b.Wait(t, time.Minute); got != 1 {
		t.Fatalf("preempt as lease_app exited %d, want 1; stderr: %s", got, b.Stderr.String())
	}
	if err := b.Stderr.String(); !strings.Contains(err, "permission denied") || !strings.Contains(err, "lease_preempt") {
		t.Errorf("stderr = %q, want permission denied naming lease_preempt", err)
	}
	if h := e.holder(t); h.RunID != first.RunID || a.Exited() {
		t.Errorf("holder after the refused preempt = %v (first exited %v), want the first run %v", h.RunID, a.Exited(), first.RunID)
	}
}

// TestRunPreemptWaitsForTheOldCommand: the preempted run's command ignores
// SIGTERM, so its run kills it only after its --grace (2s). The preemptor
// (--grace 5s by default) holds the lease from the preempt on, but starts
// its command only once the preempted run says its command stopped: on
// the database clock, the new command's first record comes after the old
// command's last one. Nothing is said about a grace running out.
func TestRunPreemptWaitsForTheOldCommand(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	stubborn := append(recorderEnv(20*time.Millisecond), proctest.EnvRecorderIgnoreTerm+"=1")
	a := e.leasetopEnv(t, stubborn, runArgs("--ttl", "3s", "--holder", "desktop", "--grace", "2s")...)
	e.waitChildren(t, 1, 30*time.Second)
	b := e.leasetopEnv(t, recorderEnv(20*time.Millisecond), runArgs("--ttl", "3s", "--holder", "phone", "--on-busy", "preempt")...)
	if got := a.Wait(t, time.Minute); got != 4 {
		t.Fatalf("the preempted run exited %d, want 4; stderr: %s", got, a.Stderr.String())
	}
	cs := e.waitChildren(t, 2, time.Minute)
	first, second := cs[0], cs[1]
	ev, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindPreempted })
	if !ok || ev.RunID != second.RunID {
		t.Fatalf("preempted event = %+v (%v), want one by the second run %v", ev, ok, second.RunID)
	}
	t.Logf("preempted at %s; the old command's last record %s; the new command's first %s",
		ev.At.Format("15:04:05.000"), first.End.Format("15:04:05.000"), second.Start.Format("15:04:05.000"))
	if first.End.Before(ev.At) {
		t.Fatalf("the old command's last record %s is before the preempt %s: it did not go on running", first.End, ev.At)
	}
	if !second.Start.After(first.End) {
		t.Errorf("the new command started at %s, while the old one still ran (last record %s)", second.Start, first.End)
	}
	if strings.Contains(b.Stderr.String(), "did not say its command stopped") {
		t.Errorf("the preemptor's stderr %q says the grace ran out; the old run said it stopped", b.Stderr.String())
	}
	b.Signal(t, syscall.SIGTERM)
	b.Wait(t, time.Minute)
}

// TestRunPreemptWaitsAtMostGrace: when the preempted run takes longer than
// the preemptor's --grace (1s) to stop its command, the preemptor starts
// its own once the grace is over, not before, and says so in one line.
func TestRunPreemptWaitsAtMostGrace(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	stubborn := append(recorderEnv(20*time.Millisecond), proctest.EnvRecorderIgnoreTerm+"=1")
	a := e.leasetopEnv(t, stubborn, runArgs("--ttl", "3s", "--holder", "desktop", "--grace", "1m")...)
	e.waitChildren(t, 1, 30*time.Second)
	b := e.leasetopEnv(t, recorderEnv(20*time.Millisecond), runArgs("--ttl", "3s", "--holder", "phone", "--on-busy", "preempt", "--grace", "1s")...)
	second := e.waitChildren(t, 2, time.Minute)[1]
	ev, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindPreempted })
	if !ok || ev.RunID != second.RunID {
		t.Fatalf("preempted event = %+v (%v), want one by the second run %v", ev, ok, second.RunID)
	}
	if waited := second.Start.Sub(ev.At); waited < time.Second {
		t.Errorf("the new command started %s after the preempt, want at least --grace (1s)", waited)
	}
	pgtest.Eventually(t, 30*time.Second, "the preemptor's line about the grace", func() bool {
		return strings.Contains(b.Stderr.String(), "did not say its command stopped within 1s (--grace)")
	})
	for _, p := range []*proctest.Process{a, b} {
		p.Signal(t, syscall.SIGKILL)
		p.Wait(t, time.Minute)
	}
}
