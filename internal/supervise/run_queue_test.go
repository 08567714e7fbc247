package supervise_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// TestRunOnBusyQueue: two `leasetop run --on-busy queue` processes queue in
// order behind a holder; a plain run is refused (exit 3) with the queue's
// length; once the holder releases, the two run their commands in the order
// they queued.
func TestRunOnBusyQueue(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	holder := uuid.New()
	if _, err := e.store.Acquire(ctx, testKey, holder, time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	var queued []*proctest.Process
	for i, label := range []string{"phone", "tablet"} {
		p := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
			"--on-busy", "queue", "--holder", label, "--", "true")
		queued = append(queued, p)
		pgtest.Eventually(t, time.Minute, fmt.Sprintf("%s's ticket", label), func() bool {
			if p.Exited() {
				t.Fatalf("%s exited %d: %s", label, p.Code(), p.Stderr.String())
			}
			q, err := e.store.QueueOf(ctx, testKey)
			return err == nil && len(q) == i+1
		})
	}
	refused := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--", "true")
	if got := refused.Wait(t, 30*time.Second); got != 3 {
		t.Fatalf("plain run exit = %d, want 3; stderr: %s", got, refused.Stderr.String())
	}
	if stderr := refused.Stderr.String(); !strings.Contains(stderr, "queued: 2 ahead") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("plain run's refusal = %q, want one line with \"queued: 2 ahead\"", stderr)
	}
	if _, err := e.store.Release(ctx, testKey, holder); err != nil {
		t.Fatal(err)
	}
	for _, p := range queued {
		if got := p.Wait(t, time.Minute); got != 0 {
			t.Fatalf("queued run exit = %d; stderr: %s", got, p.Stderr.String())
		}
	}
	var order []string
	for _, ev := range e.events(t) {
		if ev.Kind == "acquired" || ev.Kind == "taken_over" {
			order = append(order, ev.Holder)
		}
	}
	if fmt.Sprint(order) != "[desktop phone tablet]" {
		t.Fatalf("grants went to %v, want [desktop phone tablet]", order)
	}
}

// TestRunOnBusyBadValue: an unknown --on-busy value is one line, exit 2.
func TestRunOnBusyBadValue(t *testing.T) {
	e := newEnv(t)
	p := e.leasetop(t, "run", "--account", "a", "--session", "s", "--on-busy", "later\x1b[2J", "--", "true")
	if got := p.Wait(t, 30*time.Second); got != 2 {
		t.Fatalf("exit = %d, want 2; stderr: %s", got, p.Stderr.String())
	}
	if stderr := p.Stderr.String(); strings.Count(stderr, "\n") != 1 || strings.ContainsRune(stderr, 0x1b) || !strings.Contains(stderr, "--on-busy") {
		t.Errorf("stderr = %q, want one line naming --on-busy, no escape", stderr)
	}
}

// TestRunOnBusyQueueInterrupted: a queued `leasetop run --on-busy queue`
// stopped by SIGINT while it waits exits 130 without running its command
// and cancels its ticket at once (a queue_left "cancelled"), so the waiter
// behind it is the head without waiting for the ticket's TTL.
func TestRunOnBusyQueueInterrupted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.store.Acquire(ctx, testKey, uuid.New(), time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	p := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--on-busy", "queue", "--ttl", "1m", "--holder", "phone", "--", "sh", "-c", "echo ran")
	pgtest.Eventually(t, time.Minute, "phone's ticket", func() bool {
		q, err := e.store.QueueOf(ctx, testKey)
		return err == nil && len(q) == 1
	})
	p.Signal(t, syscall.SIGINT)
	if got := p.Wait(t, 30*time.Second); got != 130 {
		t.Fatalf("exit = %d, want 130; stderr: %s", got, p.Stderr.String())
	}
	if strings.Contains(p.Stdout.String(), "ran") {
		t.Error("the command ran")
	}
	if q, err := e.store.QueueOf(ctx, testKey); err != nil || len(q) != 0 {
		t.Fatalf("queue after the interrupted run = %+v, %v; want empty (its ticket cancelled, not left to expire)", q, err)
	}
	var reasons []string
	for _, ev := range e.events(t) {
		if ev.Kind == "queue_left" {
			reasons = append(reasons, ev.Holder+":"+ev.Reason)
		}
	}
	if fmt.Sprint(reasons) != "[phone:cancelled]" {
		t.Errorf("queue_left events = %v, want [phone:cancelled]", reasons)
	}
}

// queueRun starts `leasetop run --on-busy queue --ttl ttl --holder label --
// command...` and waits until its ticket is the queue's n-th.
func (e env) queueRun(t *testing.T, n int, ttl, label string, command ...string) *proctest.Process {
	t.Helper()
	args := append([]string{"run", "--account", testKey.Account, "--session", testKey.Session,
		"--on-busy", "queue", "--ttl", ttl, "--holder", label, "--"}, command...)
	p := e.leasetop(t, args...)
	pgtest.Eventually(t, time.Minute, label+"'s ticket", func() bool {
		if p.Exited() {
			t.Fatalf("%s exited %d: %s", label, p.Code(), p.Stderr.String())
		}
		q, err := e.store.QueueOf(context.Background(), testKey)
		return err == nil && len(q) == n
	})
	return p
}

// TestRunQueuedKilledWaiterLeavesWithinARenewalInterval: a queued `leasetop run` killed with SIGKILL is the head when the
// holder releases. Its ticket leaves, recorded as queue_left (reason
// expired), before the next waiter's grant; that grant comes once the dead
// ticket has expired, and before a ticket that lived a lease TTL (30 s)
// could have: the killed run had renewed it at most a renewal interval
// (10 s) before it was killed, so such a ticket would have lived until at
// least killedAt + 20 s on the database clock. Ordered by event ids and
// the database clock, no wall-clock bound.
func TestRunQueuedKilledWaiterLeavesWithinARenewalInterval(t *testing.T) {
	const (
		ttl   = 30 * time.Second
		renew = ttl / 3 // run's renewal interval
	)
	e := newEnv(t)
	ctx := context.Background()
	holder := uuid.New()
	if _, err := e.store.Acquire(ctx, testKey, holder, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	dead := e.queueRun(t, 1, ttl.String(), "dead", "true")
	next := e.queueRun(t, 2, ttl.String(), "next", "true")
	dead.Signal(t, syscall.SIGKILL)
	dead.Wait(t, 30*time.Second)
	var killedAt time.Time
	if err := e.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&killedAt); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Release(ctx, testKey, holder); err != nil {
		t.Fatal(err)
	}
	if got := next.Wait(t, time.Minute); got != 0 {
		t.Fatalf("next's exit = %d; stderr: %s", got, next.Stderr.String())
	}
	var left, granted *data.Event
	for _, ev := range e.events(t) {
		switch {
		case ev.Kind == data.KindQueueLeft && ev.Holder == "dead":
			left = &ev
		case ev.Kind == data.KindAcquired && ev.Holder == "next":
			granted = &ev
		}
	}
	switch {
	case left == nil || left.Reason != "expired":
		t.Fatalf("the killed run's queue_left = %+v, want one with reason expired", left)
	case granted == nil:
		t.Fatal("next was never granted the lease")
	case left.ID > granted.ID:
		t.Errorf("the dead ticket's queue_left (event %d) was recorded after next's grant (event %d)", left.ID, granted.ID)
	case granted.At.Before(left.ExpiresAt):
		t.Errorf("next was granted at %v, before the dead ticket expired (%v)", granted.At, left.ExpiresAt)
	case !granted.At.Before(killedAt.Add(ttl - renew)):
		t.Errorf("next was granted at %v, %v after the kill: a dead head held the queue as long as a ticket living a lease TTL (%v)",
			granted.At, granted.At.Sub(killedAt), ttl)
	}
	t.Logf("the dead ticket expired %v after the kill; next was granted %v after it expired",
		left.ExpiresAt.Sub(killedAt), granted.At.Sub(left.ExpiresAt))
}

// TestRunQueuedPrintsItsPlaceWhenItMoves: three queued
// runs; when the first is granted the lease, the last one prints a new
// line, "queued: 1 ahead", once, and "queued: 0 ahead" when the second is
// granted. The first run's command waits for a file the test creates once
// it has seen the line, so the second cannot be granted before.
func TestRunQueuedPrintsItsPlaceWhenItMoves(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	holder := uuid.New()
	if _, err := e.store.Acquire(ctx, testKey, holder, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "go")
	first := e.queueRun(t, 1, "15s", "first", "sh", "-c", `while [ ! -e "$0" ]; do sleep 0.05; done`, gate)
	second := e.queueRun(t, 2, "15s", "second", "true")
	last := e.queueRun(t, 3, "15s", "last", "true")
	if _, err := e.store.Release(ctx, testKey, holder); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, `the last run's "queued: 1 ahead"`, func() bool {
		return strings.Contains(last.Stderr.String(), "leasetop: queued: 1 ahead\n")
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*proctest.Process{first, second, last} {
		if got := p.Wait(t, time.Minute); got != 0 {
			t.Fatalf("exit = %d; stderr: %s", got, p.Stderr.String())
		}
	}
	var lines []string
	for _, line := range strings.Split(last.Stderr.String(), "\n") {
		if strings.HasPrefix(line, "leasetop: queue") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "(queued: 2 ahead)") ||
		lines[1] != "leasetop: queued: 1 ahead" || lines[2] != "leasetop: queued: 0 ahead" {
		t.Fatalf("the last run's queue lines = %q; want its refusal with (queued: 2 ahead), then 1 ahead, then 0 ahead, once each", lines)
	}
}

// TestRunQueuedClearedByOperatorStops: an operator
// clears the queue with `leasetop queue --clear` as a lease_admin login; the
// queued `leasetop run` stops waiting (woken by the queue_left
// notification) and exits 3 with one line naming the operator and the
// reason, without running its command or queueing again.
func TestRunQueuedClearedByOperatorStops(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.store.Acquire(ctx, testKey, uuid.New(), time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	waiter := e.queueRun(t, 1, "1m", "phone", "sh", "-c", "echo ran")
	adminDSN, admin := pgtest.Login(t, e.db, "lease_admin")
	clear := e.leasetopEnv(t, []string{"DATABASE_URL=" + adminDSN}, "queue", "--account", testKey.Account, "--session", testKey.Session,
		"--clear", "--reason", "INC-5")
	if got := clear.Wait(t, time.Minute); got != 0 {
		t.Fatalf("queue --clear exit = %d; stderr: %s", got, clear.Stderr.String())
	}
	if got := waiter.Wait(t, time.Minute); got != 3 {
		t.Fatalf("the cleared run's exit = %d, want 3; stderr: %s", got, waiter.Stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(waiter.Stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "cleared by "+admin) || !strings.Contains(last, "INC-5") {
		t.Errorf("the cleared run's last line = %q, want it to name %s and the reason", last, admin)
	}
	t.Logf("the cleared run said: %s", last)
	if strings.Contains(waiter.Stdout.String(), "ran") {
		t.Error("the cleared run ran its command")
	}
	if q, err := e.store.QueueOf(ctx, testKey); err != nil || len(q) != 0 {
		t.Errorf("queue after the clear = %+v, %v; want empty (the run did not queue again)", q, err)
	}
}
