package proctest_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// holderScript runs until SIGTERM, then says so and exits 0.
const holderScript = `trap 'echo stopped; exit 0' TERM; echo started; while :; do sleep 0.05; done`

// TestRunAskHandsOver: `run --on-busy ask` asks the running holder; the
// holder's `run` sends its command SIGTERM, hands the lease over when the
// command has exited (exit 0, one line naming the asker), and the asker's
// command runs under the lease with a higher fence.
func TestRunAskHandsOver(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	args := []string{"run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop", "--", "sh", "-c", holderScript}
	h := e.leasetop(t, args...)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "phone",
		"--on-busy", "ask", "--ask-timeout", "30s", "--", "sh", "-c", `echo "phone $LEASETOP_FENCE"`)
	if got := a.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("asker exit = %d, want 0; stderr: %s", got, a.Stderr.String())
	}
	if got := h.Wait(t, 30*time.Second); got != 0 {
		t.Fatalf("holder exit = %d, want 0 after handing over; stderr: %s", got, h.Stderr.String())
	}
	if !strings.Contains(h.Stdout.String(), "stopped") || !strings.Contains(h.Stderr.String(), `handed lease acct/sess over to run`) ||
		!strings.Contains(h.Stderr.String(), `("phone")`) {
		t.Fatalf("holder stdout %q stderr %q, want its command stopped and one line naming the asker", h.Stdout.String(), h.Stderr.String())
	}
	if !strings.Contains(a.Stderr.String(), "asking to hand over within 30s") || !strings.Contains(a.Stdout.String(), "phone ") {
		t.Fatalf("asker stdout %q stderr %q", a.Stdout.String(), a.Stderr.String())
	}
	var kinds []data.Kind
	var over data.Event
	for _, ev := range e.events(t) {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == data.KindHandedOver {
			over = ev
		}
	}
	want := []data.Kind{data.KindAcquired, data.KindHandoverAsked, data.KindHandedOver, data.KindReleased}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events = %v, want %v", kinds, want)
	}
	if over.Holder != "phone" || over.Fence <= over.PrevFence || !strings.Contains(a.Stdout.String(), "phone "+strconv.FormatInt(over.Fence, 10)) {
		t.Fatalf("handed_over = %+v; asker's command saw %q", over, a.Stdout.String())
	}
}

// TestRunDeclineAsks: a holder started with --decline-asks declines; the
// asker exits 3 at once with one line saying so, and the holder's command
// keeps running.
func TestRunDeclineAsks(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	args := []string{"run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop", "--decline-asks", "--", "sh", "-c", holderScript}
	h := e.leasetop(t, args...)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--on-busy", "ask", "--ask-timeout", "1m", "--", "true")
	if got := a.Wait(t, 60*time.Second); got != 3 {
		t.Fatalf("asker exit = %d, want 3; stderr: %s", got, a.Stderr.String())
	}
	if !strings.Contains(a.Stderr.String(), "the holder declined to hand over") {
		t.Fatalf("asker stderr = %q, want the decline", a.Stderr.String())
	}
	pgtest.Eventually(t, 30*time.Second, "the holder to report the decline", func() bool { return strings.Contains(h.Stderr.String(), "declined the ask") })
	if strings.Contains(h.Stdout.String(), "stopped") {
		t.Fatalf("the holder's command was stopped: %q", h.Stdout.String())
	}
}

// TestRunAskThenQueue: an ask nobody answers in time (the holder is a
// plain lease that does not watch its asks) falls back to --then queue: the
// asker takes a ticket, and runs its command once the holder releases.
func TestRunAskThenQueue(t *testing.T) {
	e := newEnv(t)
	holder := uuid.New()
	if _, err := e.store.Acquire(t.Context(), testKey, holder, time.Minute, "silent holder"); err != nil {
		t.Fatal(err)
	}
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--on-busy", "ask", "--ask-timeout", "200ms", "--then", "queue", "--", "sh", "-c", "echo ran")
	deadline := time.Now().Add(60 * time.Second)
	for {
		q, err := e.store.QueueLengths(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if q[testKey] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the asker did not queue within 60s; stderr: %s", a.Stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := e.store.Release(t.Context(), testKey, holder); err != nil || !ok {
		t.Fatalf("release the silent holder: %v, %v", ok, err)
	}
	if got := a.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("asker exit = %d, want 0; stderr: %s", got, a.Stderr.String())
	}
	if !strings.Contains(a.Stdout.String(), "ran") {
		t.Fatalf("the asker's command did not run: stdout %q, stderr %q", a.Stdout.String(), a.Stderr.String())
	}
}

// TestRunAskThenPreempt: an ask nobody answers in time falls back to
// --then preempt: the asker preempts the silent holder and runs.
func TestRunAskThenPreempt(t *testing.T) {
	e := newEnv(t)
	holder := uuid.New()
	g, err := e.store.Acquire(t.Context(), testKey, holder, time.Minute, "silent holder")
	if err != nil {
		t.Fatal(err)
	}
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--on-busy", "ask", "--ask-timeout", "200ms", "--then", "preempt", "--", "sh", "-c", "echo ran")
	if got := a.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("asker exit = %d, want 0; stderr: %s", got, a.Stderr.String())
	}
	if !strings.Contains(a.Stdout.String(), "ran") {
		t.Fatalf("the asker's command did not run: stdout %q, stderr %q", a.Stdout.String(), a.Stderr.String())
	}
	ev, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindPreempted })
	if !ok || ev.PrevRunID != data.PublicRunID(holder) || ev.Fence <= g.Fence {
		t.Fatalf("preempted event = %+v (%v), want the silent holder replaced with a higher fence", ev, ok)
	}
}

// TestRunAskBadFlags: bad --on-busy, --then, --ask-timeout and
// --on-ask-signal values, and --wait with --on-busy ask, are one line and
// exit 2, before anything is run.
func TestRunAskBadFlags(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ args []string }{
		{[]string{"--on-busy", "bogus"}},
		{[]string{"--on-busy", "ask", "--wait"}},
		{[]string{"--on-busy", "ask", "--then", "later"}},
		{[]string{"--on-busy", "ask", "--ask-timeout", "2h"}},
		{[]string{"--on-ask-signal", "KILL"}},
	} {
		args := append([]string{"run", "--account", testKey.Account, "--session", testKey.Session}, c.args...)
		p := e.leasetop(t, append(args, "--", "echo", "ran")...)
		if got := p.Wait(t, 30*time.Second); got != 2 || strings.Count(p.Stderr.String(), "\n") != 1 || p.Stdout.String() != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2, one line, nothing run", c.args, got, p.Stderr.String(), p.Stdout.String())
		}
	}
}
