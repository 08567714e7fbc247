package lease

import (
	"time"
)

// Metrics receives measurements of a Client's acquisitions and leases, for a
// metrics system: set Config.Metrics (package leaseprom adapts it to
// Prometheus). Nil functions are skipped.
//
// The functions are called synchronously on the library's goroutines, some
// while a Lease's lock is held: they must return quickly, must not block,
// must be safe for concurrent use, and must not call the Lease's methods.
// They get no key, run id or holder, so no label can grow with the number of
// sessions.
type Metrics struct {
	// AcquireFunc is called after each acquire attempt (one call of
	// lease.acquire, by Try or by each round of Wait) with how long it took
	// and its error: nil when the lease was acquired, ErrHeld (a *HeldError)
	// when another run held it, anything else when the attempt failed.
	AcquireFunc func(d time.Duration, err error)
	// RenewFunc is called after each renewal attempt with how long it took
	// and its error: nil when confirmed, ErrRejected when the database
	// refused it (the lease is then lost), anything else when the attempt
	// failed and the lease is at risk.
	RenewFunc func(d time.Duration, err error)
	// LostFunc is called once when a held lease is lost, with the cause that
	// Lease.Context carries (its Reason says why: ErrForceReleased,
	// ErrTakenOver, ErrRejected or ErrExpired).
	LostFunc func(err *LostError)
	// AtRiskFunc is called when a lease leaves AtRisk (renewed again, lost or
	// released), with how long it was at risk.
	AtRiskFunc func(d time.Duration)
}

// observeAcquire reports one acquire attempt.
func (m *Metrics) observeAcquire(d time.Duration, err error) {
	if m != nil && m.AcquireFunc != nil {
		m.AcquireFunc(d, err)
	}
}

// observeRenew reports one renewal attempt.
func (m *Metrics) observeRenew(d time.Duration, err error) {
	if m != nil && m.RenewFunc != nil {
		m.RenewFunc(d, err)
	}
}

// observeLost reports a loss.
func (m *Metrics) observeLost(err *LostError) {
	if m != nil && m.LostFunc != nil {
		m.LostFunc(err)
	}
}

// observeAtRisk reports the end of an at-risk period.
func (m *Metrics) observeAtRisk(d time.Duration) {
	if m != nil && m.AtRiskFunc != nil {
		m.AtRiskFunc(d)
	}
}
