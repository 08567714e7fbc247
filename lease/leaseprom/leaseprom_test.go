package leaseprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leaseprom"
)

// Every report of the hook lands in its metric with the right label.
func TestCollectorRecordsHook(t *testing.T) {
	c := leaseprom.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	m := c.Metrics()

	held := &lease.HeldError{Key: lease.Key{Account: "a", Session: "s"}, Holder: "other"}
	m.AcquireFunc(2*time.Millisecond, nil)
	m.AcquireFunc(time.Millisecond, fmt.Errorf("acquire: %w", held))
	m.AcquireFunc(time.Millisecond, held)
	m.AcquireFunc(3*time.Second, context.DeadlineExceeded)
	m.RenewFunc(time.Millisecond, nil)
	m.RenewFunc(time.Millisecond, errors.New("connection reset"))
	m.RenewFunc(time.Millisecond, lease.ErrRejected)
	for _, reason := range []error{lease.ErrForceReleased, lease.ErrTakenOver, lease.ErrRejected, lease.ErrExpired, lease.ErrExpired} {
		m.LostFunc(&lease.LostError{Reason: reason})
	}
	m.AtRiskFunc(1500 * time.Millisecond)

	want := `
# HELP leasetop_client_leases_lost_total Held leases lost, by cause: force_released, taken_over, preempted, rejected or expired (the local deadline passed without a confirmed renewal).
# TYPE leasetop_client_leases_lost_total counter
leasetop_client_leases_lost_total{cause="expired"} 2
leasetop_client_leases_lost_total{cause="force_released"} 1
leasetop_client_leases_lost_total{cause="preempted"} 0
leasetop_client_leases_lost_total{cause="rejected"} 1
leasetop_client_leases_lost_total{cause="taken_over"} 1
# HELP leasetop_client_renewals_total Renewal attempts by outcome: confirmed, failed (error or timeout: the lease is at risk) or rejected (the lease is lost).
# TYPE leasetop_client_renewals_total counter
leasetop_client_renewals_total{outcome="confirmed"} 1
leasetop_client_renewals_total{outcome="failed"} 1
leasetop_client_renewals_total{outcome="rejected"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"leasetop_client_leases_lost_total", "leasetop_client_renewals_total"); err != nil {
		t.Error(err)
	}
	for outcome, n := range map[string]int{"acquired": 1, "held": 2, "error": 1} {
		if got := histogramCount(t, reg, "leasetop_client_acquire_duration_seconds", "outcome", outcome); got != uint64(n) {
			t.Errorf("acquire attempts with outcome %q = %d, want %d", outcome, got, n)
		}
	}
	if got := histogramCount(t, reg, "leasetop_client_at_risk_duration_seconds", "", ""); got != 1 {
		t.Errorf("at-risk periods = %d, want 1", got)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v, want no problems", err, problems)
	}
}

// A new Collector shows every label value at zero, so an alert's rate()
// sees the first loss.
func TestCollectorStartsAtZero(t *testing.T) {
	c := leaseprom.New()
	if n := testutil.CollectAndCount(c, "leasetop_client_leases_lost_total"); n != 5 {
		t.Errorf("leases_lost_total series = %d, want one per cause (5)", n)
	}
	if n := testutil.CollectAndCount(c, "leasetop_client_renewals_total"); n != 3 {
		t.Errorf("renewals_total series = %d, want one per outcome (3)", n)
	}
}

// Cause names each reason a LostError can carry.
func TestCause(t *testing.T) {
	for _, tc := range []struct {
		reason error
		want   string
	}{
		{lease.ErrForceReleased, "force_released"},
		{lease.ErrTakenOver, "taken_over"},
		{lease.ErrPreempted, "preempted"},
		{lease.ErrRejected, "rejected"},
		{lease.ErrExpired, "expired"},
	} {
		if got := leaseprom.Cause(&lease.LostError{Key: data.Key{Account: "a", Session: "s"}, Reason: tc.reason}); got != tc.want {
			t.Errorf("Cause(%v) = %q, want %q", tc.reason, got, tc.want)
		}
	}
}

// histogramCount returns the sample count of the histogram name whose label
// has value (any series when label is "").
func histogramCount(t *testing.T, g prometheus.Gatherer, name, label, value string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			matches := label == ""
			for _, lp := range m.GetLabel() {
				matches = matches || (lp.GetName() == label && lp.GetValue() == value)
			}
			if matches {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	t.Fatalf("no histogram %s{%s=%q}", name, label, value)
	return 0
}
