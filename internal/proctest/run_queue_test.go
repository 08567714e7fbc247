package proctest_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/internal/proctest"
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
