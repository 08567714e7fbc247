package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// allowAll is the test's Authorizer: every request is allowed.
var allowAll = lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })

var testKey = lease.Key{Account: "acct", Session: "sess"}

func newClient(t *testing.T, store *data.Store, cfg lease.Config) *lease.Client {
	t.Helper()
	c, err := lease.New(store, cfg)
	if err != nil {
		t.Fatalf("lease.New(%+v) err = %v", cfg, err)
	}
	t.Cleanup(c.Close)
	return c
}

func permit(t *testing.T, c *lease.Client, key lease.Key, holder string) lease.Permit {
	t.Helper()
	p, err := c.Authorize(context.Background(), allowAll, key, holder)
	if err != nil {
		t.Fatalf("Authorize(%v) err = %v", key, err)
	}
	return p
}

func acquire(t *testing.T, c *lease.Client, p lease.Permit) *lease.Lease {
	t.Helper()
	l, err := c.Try(context.Background(), p)
	if err != nil {
		t.Fatalf("Try(%v) err = %v", p.Request().Key, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

// waitAsync starts c.Wait(ctx, p) and returns a function that waits for its
// outcome (call it before the test ends).
func waitAsync(ctx context.Context, c *lease.Client, p lease.Permit) func() (*lease.Lease, error) {
	type outcome struct {
		l   *lease.Lease
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		l, err := c.Wait(ctx, p)
		done <- outcome{l, err}
	}()
	return func() (*lease.Lease, error) {
		o := <-done
		return o.l, o.err
	}
}

// handOff releases la with release, waits for a waiter's outcome and checks
// that it got the lease with a higher fence; the waiter's lease is released
// when the test ends.
func handOff(t *testing.T, la *lease.Lease, release func() error, outcome func() (*lease.Lease, error)) *lease.Lease {
	t.Helper()
	released := time.Now()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	lb, err := outcome()
	if err != nil {
		t.Fatalf("Wait err = %v", err)
	}
	t.Logf("handoff after %s", time.Since(released).Round(time.Millisecond))
	t.Cleanup(func() { _ = lb.Release(context.Background()) })
	if lb.Fence() <= la.Fence() {
		t.Errorf("fence %d, want > %d", lb.Fence(), la.Fence())
	}
	return lb
}

// waitDone waits for l's context to be cancelled and returns the cause.
func waitDone(t *testing.T, l *lease.Lease, timeout time.Duration) error {
	t.Helper()
	select {
	case <-l.Done():
		return l.Err()
	case <-time.After(timeout):
		t.Fatalf("lease still %v after %s", l.State().Status, timeout)
		return nil
	}
}

// statuses records every status l passes through until it ends.
type statuses struct {
	mu   sync.Mutex
	seen []lease.Status
	done chan struct{}
}

func recordStatuses(l *lease.Lease) *statuses {
	s := &statuses{seen: []lease.Status{l.State().Status}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			<-l.Changed()
			st := l.State().Status
			s.mu.Lock()
			if s.seen[len(s.seen)-1] != st {
				s.seen = append(s.seen, st)
			}
			s.mu.Unlock()
			if st == lease.Lost || st == lease.Released {
				return
			}
		}
	}()
	return s
}

func (s *statuses) wait(t *testing.T) []lease.Status {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("status recorder did not see the lease end")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lease.Status(nil), s.seen...)
}

// holderOf returns the run id holding key, or the zero UUID.
func holderOf(t *testing.T, s *data.Store, key lease.Key) data.Lease {
	t.Helper()
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	for _, l := range snap.Leases {
		if l.Key == key {
			return l
		}
	}
	return data.Lease{}
}

// pendingWait is a Wait running on a goroutine of its own.
type pendingWait struct {
	done chan waitResult
}

type waitResult struct {
	l   *lease.Lease
	err error
}

// startWait starts c.Wait(ctx, p).
func startWait(ctx context.Context, c *lease.Client, p lease.Permit) *pendingWait {
	w := &pendingWait{done: make(chan waitResult, 1)}
	go func() {
		l, err := c.Wait(ctx, p)
		w.done <- waitResult{l, err}
	}()
	return w
}

// returned reports, without waiting, whether Wait has returned, and what.
func (w *pendingWait) returned() (waitResult, bool) {
	select {
	case r := <-w.done:
		w.done <- r
		return r, true
	default:
		return waitResult{}, false
	}
}

// result waits until Wait returns, and fails the test if it does not within
// timeout.
func (w *pendingWait) result(t *testing.T, timeout time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-w.done:
		w.done <- r
		return r
	case <-time.After(timeout):
		t.Fatalf("Wait still waiting after %s", timeout)
		return waitResult{}
	}
}

// lease waits until Wait returns, and fails the test unless it returned the
// lease within timeout ("no takeover " + after, otherwise). The lease is
// released when the test ends.
func (w *pendingWait) lease(t *testing.T, timeout time.Duration, after string) *lease.Lease {
	t.Helper()
	var r waitResult
	select {
	case r = <-w.done:
	case <-time.After(timeout):
		t.Fatalf("Wait still waiting %s %s", timeout, after)
	}
	if r.err != nil {
		t.Fatalf("Wait err = %v, want the lease", r.err)
	}
	t.Cleanup(func() { _ = r.l.Release(context.Background()) })
	return r.l
}
