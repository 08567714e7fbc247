// Package leaseprom records what package lease measures (lease.Metrics) in
// Prometheus collectors. It registers nothing by itself: register the
// Collector on the registry your program serves, never a global one.
//
//	c := leaseprom.New()
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(c)
//	client, err := lease.New(store, lease.Config{Metrics: c.Metrics()})
//
// The metrics, all without a key, run id or holder label (so their number
// does not grow with the number of sessions):
//
//	leasetop_client_acquire_duration_seconds{outcome}  histogram of acquire attempts; outcome
//	                                                   acquired, held (a refusal) or error
//	leasetop_client_renewals_total{outcome}            renewal attempts: confirmed, failed (the
//	                                                   lease is at risk) or rejected (it is lost)
//	leasetop_client_leases_lost_total{cause}           losses: force_released, taken_over,
//	                                                   preempted, rejected or expired
//	leasetop_client_at_risk_duration_seconds           histogram of the periods leases spent at
//	                                                   risk (renewals failing, deadline not passed)
//
// Refusals are leasetop_client_acquire_duration_seconds_count{outcome="held"};
// renewal failures are leasetop_client_renewals_total{outcome="failed"}.
package leaseprom

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/lease"
)

// Label values.
const (
	OutcomeAcquired  = "acquired"
	OutcomeHeld      = "held"
	OutcomeError     = "error"
	OutcomeConfirmed = "confirmed"
	OutcomeFailed    = "failed"
	OutcomeRejected  = "rejected"

	CauseForceReleased = "force_released"
	CauseTakenOver     = "taken_over"
	CausePreempted     = "preempted"
	CauseRejected      = "rejected"
	CauseExpired       = "expired"
)

// Collector holds the metrics of one or more lease.Clients. It is a
// prometheus.Collector; register it on your registry.
type Collector struct {
	acquire  *prometheus.HistogramVec
	renewals *prometheus.CounterVec
	lost     *prometheus.CounterVec
	atRisk   prometheus.Histogram
}

// New returns a Collector with every label value present at zero, so rate()
// and increase() see the first event.
func New() *Collector {
	c := &Collector{
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "leasetop_client_acquire_duration_seconds",
			Help:    "Acquire attempts (one call of lease.acquire each) by outcome: acquired, held (refused: another run holds the lease) or error.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms to 4 s
		}, []string{"outcome"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leasetop_client_renewals_total",
			Help: "Renewal attempts by outcome: confirmed, failed (error or timeout: the lease is at risk) or rejected (the lease is lost).",
		}, []string{"outcome"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leasetop_client_leases_lost_total",
			Help: "Held leases lost, by cause: force_released, taken_over, preempted, rejected or expired (the local deadline passed without a confirmed renewal).",
		}, []string{"cause"}),
		atRisk: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasetop_client_at_risk_duration_seconds",
			Help:    "Periods a lease spent at risk (renewals failing, local deadline not passed), observed when each ends.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12), // 10 ms to 20 s
		}),
	}
	for _, o := range []string{OutcomeAcquired, OutcomeHeld, OutcomeError} {
		c.acquire.WithLabelValues(o)
	}
	for _, o := range []string{OutcomeConfirmed, OutcomeFailed, OutcomeRejected} {
		c.renewals.WithLabelValues(o)
	}
	for _, cause := range []string{CauseForceReleased, CauseTakenOver, CausePreempted, CauseRejected, CauseExpired} {
		c.lost.WithLabelValues(cause)
	}
	return c
}

// Metrics returns the hook to set as lease.Config.Metrics. Several Clients
// may share it.
func (c *Collector) Metrics() *lease.Metrics {
	return &lease.Metrics{
		AcquireFunc: func(d time.Duration, err error) {
			c.acquire.WithLabelValues(acquireOutcome(err)).Observe(d.Seconds())
		},
		RenewFunc: func(_ time.Duration, err error) {
			c.renewals.WithLabelValues(renewOutcome(err)).Inc()
		},
		LostFunc: func(err *lease.LostError) {
			c.lost.WithLabelValues(Cause(err)).Inc()
		},
		AtRiskFunc: func(d time.Duration) {
			c.atRisk.Observe(d.Seconds())
		},
	}
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.acquire.Describe(ch)
	c.renewals.Describe(ch)
	c.lost.Describe(ch)
	c.atRisk.Describe(ch)
}

// Collect sends every metric's current value.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.acquire.Collect(ch)
	c.renewals.Collect(ch)
	c.lost.Collect(ch)
	c.atRisk.Collect(ch)
}

func acquireOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeAcquired
	case errors.Is(err, lease.ErrHeld):
		return OutcomeHeld
	default:
		return OutcomeError
	}
}

func renewOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeConfirmed
	case errors.Is(err, lease.ErrRejected):
		return OutcomeRejected
	default:
		return OutcomeFailed
	}
}

// Cause is the cause label of a loss: force_released, taken_over,
// preempted, rejected or expired.
func Cause(err *lease.LostError) string {
	switch {
	case errors.Is(err, lease.ErrForceReleased):
		return CauseForceReleased
	case errors.Is(err, lease.ErrTakenOver):
		return CauseTakenOver
	case errors.Is(err, lease.ErrPreempted):
		return CausePreempted
	case errors.Is(err, lease.ErrExpired):
		return CauseExpired
	default:
		return CauseRejected
	}
}
