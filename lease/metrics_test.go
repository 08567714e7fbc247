package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// metricsLog records what a Client reports to its Metrics hook.
type metricsLog struct {
	mu       sync.Mutex
	acquires []error
	renewals []error
	lost     []*lease.LostError
	atRisk   []time.Duration
}

func (m *metricsLog) hook() *lease.Metrics {
	return &lease.Metrics{
		AcquireFunc: func(_ time.Duration, err error) { m.mu.Lock(); m.acquires = append(m.acquires, err); m.mu.Unlock() },
		RenewFunc:   func(_ time.Duration, err error) { m.mu.Lock(); m.renewals = append(m.renewals, err); m.mu.Unlock() },
		LostFunc:    func(err *lease.LostError) { m.mu.Lock(); m.lost = append(m.lost, err); m.mu.Unlock() },
		AtRiskFunc:  func(d time.Duration) { m.mu.Lock(); m.atRisk = append(m.atRisk, d); m.mu.Unlock() },
	}
}

// count returns how many errors in errs match: nil matches nil only.
func count(errs []error, target error) int {
	n := 0
	for _, err := range errs {
		if (target == nil && err == nil) || (target != nil && errors.Is(err, target)) {
			n++
		}
	}
	return n
}

func (m *metricsLog) snapshot() metricsLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	return metricsLog{
		acquires: append([]error(nil), m.acquires...), renewals: append([]error(nil), m.renewals...),
		lost: append([]*lease.LostError(nil), m.lost...), atRisk: append([]time.Duration(nil), m.atRisk...),
	}
}

// The hook sees each acquire attempt with its outcome, each renewal, a
// loss with its cause, and the time a lease spent at risk before it was
// lost.
func TestMetricsHook(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	var log metricsLog
	cfg := lease.Config{TTL: 2 * time.Second, RenewInterval: 300 * time.Millisecond, SafetyMargin: 700 * time.Millisecond,
		RenewTimeout: 200 * time.Millisecond, Metrics: log.hook()}
	c := newClient(t, store, cfg)
	ctx := context.Background()

	l := acquire(t, c, permit(t, c, testKey, "blocked"))
	if _, err := c.Try(ctx, permit(t, c, testKey, "other")); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Try while held err = %v, want ErrHeld", err)
	}
	pgtest.Eventually(t, 10*time.Second, "a confirmed renewal reported", func() bool { return count(log.snapshot().renewals, nil) > 0 })
	unblock := leasetest.BlockRenewals(t, store, testKey)
	cause := leasetest.WaitLost(t, l)
	unblock()

	other := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "forced"}, "forced"))
	leasetest.ForceLoss(t, store, other)

	got := log.snapshot()
	if n := count(got.acquires, nil); n != 2 {
		t.Errorf("acquire attempts reported as acquired = %d, want 2 (%v)", n, got.acquires)
	}
	if n := count(got.acquires, lease.ErrHeld); n != 1 {
		t.Errorf("acquire attempts reported as held = %d, want 1 (%v)", n, got.acquires)
	}
	failed := len(got.renewals) - count(got.renewals, nil) - count(got.renewals, lease.ErrRejected)
	if failed == 0 || count(got.renewals, lease.ErrRejected) != 1 {
		t.Errorf("renewals = %v, want failures while cut off and one rejection after the forced release", got.renewals)
	}
	if len(got.lost) != 2 || got.lost[0] != cause || !errors.Is(got.lost[0], lease.ErrExpired) || !errors.Is(got.lost[1], lease.ErrForceReleased) {
		t.Errorf("losses = %v, want the cut-off lease's ErrExpired (%v), then the forced release", got.lost, cause)
	}
	if len(got.atRisk) != 1 || got.atRisk[0] <= 0 || got.atRisk[0] > cfg.TTL {
		t.Errorf("at-risk periods = %v, want one, longer than 0 and shorter than the TTL", got.atRisk)
	}
}
