package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
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
// lost. A forced release is noticed by the holder watch or by the next
// renewal, whichever comes first (the watch's listener may still be
// starting), so the rejection the hook must report comes from a lease that
// expired on the server, which only a renewal can find.
func TestMetricsHook(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	var log metricsLog
	// Timeouts a loaded machine keeps: a renewal that timed out before the
	// block would add an at-risk period.
	cfg := lease.Config{TTL: 6 * time.Second, RenewInterval: time.Second, SafetyMargin: 2 * time.Second,
		RenewTimeout: time.Second, Metrics: log.hook()}
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

	forced := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "forced"}, "forced"))
	leasetest.ForceLoss(t, store, forced)
	rejectedBefore := count(log.snapshot().renewals, lease.ErrRejected) // 0 or 1: see above

	expired := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "expired"}, "expired"))
	leasetest.ExpireNow(t, store, expired.Key())
	leasetest.WaitLost(t, expired)

	got := log.snapshot()
	if n := count(got.acquires, nil); n != 3 {
		t.Errorf("acquire attempts reported as acquired = %d, want 3 (%v)", n, got.acquires)
	}
	if n := count(got.acquires, lease.ErrHeld); n != 1 {
		t.Errorf("acquire attempts reported as held = %d, want 1 (%v)", n, got.acquires)
	}
	failed := len(got.renewals) - count(got.renewals, nil) - count(got.renewals, lease.ErrRejected)
	if failed == 0 || count(got.renewals, lease.ErrRejected) != rejectedBefore+1 {
		t.Errorf("renewals = %v, want failures while cut off and one rejection of the expired lease", got.renewals)
	}
	if len(got.lost) != 3 || got.lost[0] != cause || !errors.Is(got.lost[0], lease.ErrExpired) ||
		!errors.Is(got.lost[1], lease.ErrForceReleased) || !errors.Is(got.lost[2], lease.ErrRejected) {
		t.Errorf("losses = %v, want the cut-off lease's ErrExpired (%v), the forced release, then the expired lease's rejection", got.lost, cause)
	}
	if len(got.atRisk) != 1 || got.atRisk[0] <= 0 || got.atRisk[0] > cfg.TTL {
		t.Errorf("at-risk periods = %v, want one, longer than 0 and shorter than the TTL", got.atRisk)
	}
}
