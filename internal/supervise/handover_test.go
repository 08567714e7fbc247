package supervise_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// holderScript runs until SIGTERM, then says so and exits 0.
const holderScript = `trap 'echo stopped; exit 0' TERM; echo started; while :; do sleep 0.05; done`

// TestRunAskHandsOver: `run --on-busy ask` asks the running holder, which
// opted in with --on-ask hand-over; the holder's `run` sends its command
// SIGTERM, hands the lease over when the command has exited (exit 0, one
// line naming the asker), and the asker's command runs under the lease
// with a higher fence. The lease then says what the asker declared
// (--not-preemptible, --attachment), not what the holder did: a device
// that joins reads the new attachment, and a preempt is refused.
func TestRunAskHandsOver(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	args := []string{"run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop",
		"--attachment", "stream-desk", "--on-ask", "hand-over", "--", "sh", "-c", holderScript}
	h := e.leasetop(t, args...)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "phone",
		"--on-busy", "ask", "--ask-timeout", "30s", "--not-preemptible", "--attachment", "pay-stream",
		"--", "sh", "-c", `echo "phone $LEASETOP_FENCE"; while :; do sleep 0.05; done`)
	if got := h.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("holder exit = %d, want 0 after handing over; stderr: %s", got, h.Stderr.String())
	}
	if !strings.Contains(h.Stdout.String(), "stopped") || !strings.Contains(h.Stderr.String(), `handed lease acct/sess over to run`) ||
		!strings.Contains(h.Stderr.String(), `("phone")`) {
		t.Fatalf("holder stdout %q stderr %q, want its command stopped and one line naming the asker", h.Stdout.String(), h.Stderr.String())
	}
	pgtest.Eventually(t, 30*time.Second, "the asker's command to start", func() bool { return strings.Contains(a.Stdout.String(), "phone ") })
	if !strings.Contains(a.Stderr.String(), "asking to hand over within 30s") {
		t.Fatalf("asker stderr %q", a.Stderr.String())
	}
	if l := e.holder(t); !l.NotPreemptible || l.Attachment != "pay-stream" || l.Holder != "phone" {
		t.Fatalf("the lease handed over = %+v, want phone's, not preemptible, attachment pay-stream", l)
	}
	j := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "preempt", "--", "true")
	if got := j.Wait(t, 60*time.Second); got != 3 || !strings.Contains(j.Stderr.String(), `attachment "pay-stream"`) ||
		!strings.Contains(j.Stderr.String(), "not preemptible") {
		t.Fatalf("a preempt of the handed-over run: exit %d, stderr %q; want 3 naming attachment pay-stream, not preemptible", got, j.Stderr.String())
	}
	a.Signal(t, syscall.SIGTERM)
	if got := a.Wait(t, 60*time.Second); got != 128+int(syscall.SIGTERM) {
		t.Fatalf("asker exit = %d after SIGTERM; stderr: %s", got, a.Stderr.String())
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
	if over.Holder != "phone" || over.PrevHolder != "desktop" || over.Fence <= over.PrevFence ||
		!strings.Contains(a.Stdout.String(), "phone "+strconv.FormatInt(over.Fence, 10)) {
		t.Fatalf("handed_over = %+v; asker's command saw %q", over, a.Stdout.String())
	}
}

// TestRunDeclinesAsksByDefault: a holder's command that knows nothing of
// hand-overs is not stopped by a stranger's ask: without --on-ask
// hand-over, run declines at once (one line on the holder's side saying
// how to opt in), the asker exits 3 with one line saying so, and the
// holder's command keeps running.
func TestRunDeclinesAsksByDefault(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	args := []string{"run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop", "--", "sh", "-c", holderScript}
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
	pgtest.Eventually(t, 30*time.Second, "the holder to report the decline", func() bool {
		return strings.Contains(h.Stderr.String(), "declined the ask") && strings.Contains(h.Stderr.String(), "--on-ask hand-over")
	})
	if strings.Contains(h.Stdout.String(), "stopped") || h.Exited() {
		t.Fatalf("the holder's command was stopped: %q (exited %v)", h.Stdout.String(), h.Exited())
	}
}

// TestRunAskOfNotPreemptibleRun: a run that declared --not-preemptible
// cannot be asked, whatever it would answer: the asker exits 3 at once with
// one line saying why, no ask is recorded (no handover_asked), and the
// holder's command keeps running. --then queue then queues behind it.
func TestRunAskOfNotPreemptibleRun(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	h := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "checkout",
		"--not-preemptible", "--", "sh", "-c", holderScript)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "ask", "--", "true")
	if got := a.Wait(t, 60*time.Second); got != 3 {
		t.Fatalf("asker exit = %d, want 3; stderr: %s", got, a.Stderr.String())
	}
	if err := a.Stderr.String(); !strings.Contains(err, "must not be preempted, so it may not be asked") || strings.Count(err, "\n") != 2 {
		t.Errorf("asker stderr = %q, want the asking line and one line saying the holder may not be asked", err)
	}
	if _, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindHandoverAsked }); ok {
		t.Error("an ask of a not-preemptible run was recorded")
	}
	if strings.Contains(h.Stdout.String(), "stopped") || h.Exited() {
		t.Fatalf("the holder's command was stopped: %q", h.Stdout.String())
	}
	q := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "ask", "--then", "queue", "--", "true")
	waitQueueLength(t, e, 1, q)
	q.Signal(t, syscall.SIGTERM)
	q.Wait(t, 60*time.Second)
}

// waitQueueLength waits until the session's queue holds n tickets; p is
// the process expected to have queued (its stderr is shown on failure).
func waitQueueLength(t *testing.T, e env, n int, p *proctest.Process) {
	t.Helper()
	pgtest.Eventually(t, 60*time.Second, strconv.Itoa(n)+" tickets in the queue", func() bool {
		q, err := e.store.QueueLengths(t.Context())
		if err != nil {
			t.Fatalf("QueueLengths: %v; stderr: %s", err, p.Stderr.String())
		}
		return q[testKey] == n
	})
}

// TestRunAskMayNotJumpTheQueue: with a run queued behind the holder, an
// ask is refused at once (exit 3, one line: 1 queued ahead) and the holder,
// although it would hand over, keeps running; --then queue joins the queue
// behind the waiter.
func TestRunAskMayNotJumpTheQueue(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	h := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop",
		"--on-ask", "hand-over", "--", "sh", "-c", holderScript)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	w := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "queue", "--", "true")
	waitQueueLength(t, e, 1, w)
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "ask", "--", "true")
	if got := a.Wait(t, 60*time.Second); got != 3 || !strings.Contains(a.Stderr.String(), "1 queued ahead; an ask may not pass them") {
		t.Fatalf("asker exit = %d, stderr %q; want 3 and 1 queued ahead", got, a.Stderr.String())
	}
	if strings.Contains(h.Stdout.String(), "stopped") || h.Exited() {
		t.Fatalf("the holder's command was stopped for an ask behind the queue: %q", h.Stdout.String())
	}
	q := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--on-busy", "ask", "--then", "queue", "--", "true")
	waitQueueLength(t, e, 2, q)
	for _, p := range []*proctest.Process{q, w} {
		p.Signal(t, syscall.SIGTERM)
		p.Wait(t, 60*time.Second)
	}
}

// TestRunAskDeclinedThenQueue: --then queue applies when the holder
// declines: the asker queues with the run id it asked with, and runs its
// command, as that run, once the holder's command has ended.
func TestRunAskDeclinedThenQueue(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	h := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop", "--", "sh", "-c", holderScript)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "phone",
		"--on-busy", "ask", "--then", "queue", "--", "sh", "-c", "echo ran")
	waitQueueLength(t, e, 1, a)
	h.Signal(t, syscall.SIGTERM)
	if got := h.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("holder exit = %d after SIGTERM; stderr: %s", got, h.Stderr.String())
	}
	if got := a.Wait(t, 60*time.Second); got != 0 || !strings.Contains(a.Stdout.String(), "ran") {
		t.Fatalf("asker exit = %d, stdout %q, stderr %q; want its command run", got, a.Stdout.String(), a.Stderr.String())
	}
	runs := map[data.Kind]uuid.UUID{}
	for _, ev := range e.events(t) {
		if ev.Holder == "phone" {
			runs[ev.Kind] = ev.RunID
		}
	}
	asked := runs[data.KindHandoverAsked]
	if asked == uuid.Nil || runs[data.KindHandoverDeclined] != asked || runs[data.KindQueueJoined] != asked || runs[data.KindAcquired] != asked {
		t.Fatalf("the asker's events name runs %v; want one run id for the ask, the decline, the ticket and the grant", runs)
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
// --then preempt, with --reason: the asker preempts the silent holder with
// the run id it asked with and the reason given, and runs.
func TestRunAskThenPreempt(t *testing.T) {
	e := newEnv(t)
	holder := uuid.New()
	g, err := e.store.Acquire(t.Context(), testKey, holder, time.Minute, "silent holder")
	if err != nil {
		t.Fatal(err)
	}
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--on-busy", "ask", "--ask-timeout", "200ms", "--then", "preempt", "--reason", "moved to the phone", "--", "sh", "-c", "echo ran")
	if got := a.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("asker exit = %d, want 0; stderr: %s", got, a.Stderr.String())
	}
	if !strings.Contains(a.Stdout.String(), "ran") {
		t.Fatalf("the asker's command did not run: stdout %q, stderr %q", a.Stdout.String(), a.Stderr.String())
	}
	evs := e.events(t)
	ev, ok := findEvent(evs, func(ev data.Event) bool { return ev.Kind == data.KindPreempted })
	if !ok || ev.PrevRunID != data.PublicRunID(holder) || ev.Fence <= g.Fence || ev.Reason != "moved to the phone" {
		t.Fatalf("preempted event = %+v (%v), want the silent holder replaced with a higher fence and the reason given", ev, ok)
	}
	asked, _ := findEvent(evs, func(ev data.Event) bool { return ev.Kind == data.KindHandoverAsked })
	if asked.RunID != ev.RunID {
		t.Fatalf("the ask was made by run %v and the preempt by run %v; want one run id", asked.RunID, ev.RunID)
	}
}

// TestRunAskBadFlags: bad --on-busy, --then, --ask-timeout, --on-ask and
// --on-ask-signal values, --wait with --on-busy ask, the asker's flags
// without --on-busy ask, --reason without a preempt, --on-ask-signal
// without --on-ask hand-over, --on-ask hand-over with --not-preemptible,
// and the retired --decline-asks, are one line and exit 2, before anything
// is run.
func TestRunAskBadFlags(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ args []string }{
		{[]string{"--on-busy", "bogus"}},
		{[]string{"--on-busy", "ask", "--wait"}},
		{[]string{"--on-busy", "ask", "--then", "later"}},
		{[]string{"--on-busy", "ask", "--ask-timeout", "2h"}},
		{[]string{"--on-ask", "hand-over", "--on-ask-signal", "KILL"}},
		{[]string{"--on-ask-signal", "SIGUSR1"}},
		{[]string{"--on-ask", "sometimes"}},
		{[]string{"--on-ask", "hand-over", "--not-preemptible"}},
		{[]string{"--then", "queue"}},
		{[]string{"--on-busy", "wait", "--ask-timeout", "5s"}},
		{[]string{"--on-busy", "ask", "--then", "queue", "--reason", "why"}},
		{[]string{"--reason", "why"}},
		{[]string{"--decline-asks"}},
	} {
		args := append([]string{"run", "--account", testKey.Account, "--session", testKey.Session}, c.args...)
		p := e.leasetop(t, append(args, "--", "echo", "ran")...)
		if got := p.Wait(t, 30*time.Second); got != 2 || strings.Count(p.Stderr.String(), "\n") != 1 || p.Stdout.String() != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2, one line, nothing run", c.args, got, p.Stderr.String(), p.Stdout.String())
		}
	}
}

// TestRunAskExpiredWhileStopping: a holder that opted in stops its command
// for an ask, but the command takes longer to exit than the ask lives (it
// waits for a file the test writes only after the asker has given up).
// The asker exits 3; the holder cannot hand over, and must not report
// success: it exits 7 with one line saying it stopped its command for an
// ask that ended first, and releases the lease.
func TestRunAskExpiredWhileStopping(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	gate := filepath.Join(t.TempDir(), "go")
	script := `trap 'while [ ! -e "$GATE" ]; do sleep 0.02; done; echo stopped; exit 0' TERM; echo started; while :; do sleep 0.05; done`
	h := e.leasetopEnv(t, []string{"GATE=" + gate}, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--holder", "desktop", "--on-ask", "hand-over", "--", "sh", "-c", script)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "phone",
		"--on-busy", "ask", "--ask-timeout", "500ms", "--", "true")
	if got := a.Wait(t, 60*time.Second); got != 3 || !strings.Contains(a.Stderr.String(), "did not hand over") {
		t.Fatalf("asker exit = %d, stderr %q; want 3, the ask expired", got, a.Stderr.String())
	}
	if h.Exited() {
		t.Fatalf("the holder exited before its command did: stderr %q", h.Stderr.String())
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := h.Wait(t, 60*time.Second); got != 7 {
		t.Fatalf("holder exit = %d, want 7 (stopped for an ask that ended first); stderr: %s", got, h.Stderr.String())
	}
	var said []string
	for _, line := range strings.Split(strings.TrimSpace(h.Stderr.String()), "\n") {
		if strings.Contains(line, "did not hand over") {
			said = append(said, line)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], `stopped sh for the ask of run`) || !strings.Contains(said[0], `("phone")`) {
		t.Fatalf("the holder's lines about it = %q, want one saying it stopped sh for phone's ask and did not hand over", said)
	}
	if l := e.holder(t); l.RunID != uuid.Nil {
		t.Fatalf("the lease is still held by %v after the holder exited", l.RunID)
	}
}
