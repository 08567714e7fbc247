package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Wait acquires p's lease for a fresh run id, waiting as long as ctx allows
// while another run holds it. A release, forced release or takeover of the
// key (a notification on the Client's shared listener) wakes it at once;
// without one it retries when the holder's TTL runs out or after
// PollInterval, with jitter, so a lost notification costs only latency.
// Transient database errors, and attempts that time out (each is bounded by
// TTL - SafetyMargin; a holder frozen inside its fenced transaction keeps
// the row locked), are retried with backoff while ctx lives; invalid input,
// a missing schema and permission errors are returned, and so is a
// read-only server (data.ErrReadOnly) before the server has answered any
// attempt (see retryDelay).
//
// When ctx ends first, Wait returns context.Cause(ctx) and holds nothing;
// when the Client is closed, ErrClosed.
func (c *Client) Wait(ctx context.Context, p Permit) (*Lease, error) {
	if err := c.check(p); err != nil {
		return nil, err
	}
	w, err := c.subscribe(p.req.Key)
	if err != nil {
		return nil, err
	}
	defer c.unsubscribe(w)
	tr := &tracker{runID: uuid.New()}
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	var b backoff
	giveUp := func(err error) (*Lease, error) {
		if tr.maybeGranted() {
			c.cleanup(p.req.Key, tr.runID, tr.lastSent.Add(c.cfg.TTL-c.cfg.SafetyMargin))
		}
		return nil, err
	}
	for {
		if c.isClosed() {
			return giveUp(ErrClosed)
		}
		l, err := c.try(ctx, p.req, tr, c.acquire)
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return giveUp(context.Cause(ctx))
		}
		delay, retry := c.retryDelay(err, &b)
		if !retry {
			return giveUp(err)
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return giveUp(context.Cause(ctx))
		case <-w.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// backoff is a waiting loop's memory of its failed attempts.
type backoff struct {
	failures int  // consecutive failures since the server last answered
	answered bool // a writable server has answered this loop (a refusal, a ticket, an ask)
}

// answer records that a writable server answered an attempt.
func (b *backoff) answer() {
	b.failures = 0
	b.answered = true
}

// retryDelay says whether a waiting loop should try again after err, and
// when. A read-only server (ErrReadOnly) is retried only once a writable
// one has answered the loop: then it is a failover in progress (a pooler or
// a proxy still sends the connection to the demoted primary), while before
// it the loop was pointed at a standby, where it would wait for ever; it is
// refused there with the usual line, as a plain Try is.
func (c *Client) retryDelay(err error, b *backoff) (time.Duration, bool) {
	var held *data.HeldError
	switch {
	case errors.As(err, &held):
		b.answer()
		if held.RunID != uuid.Nil && held.Remaining < c.cfg.PollInterval {
			return afterExpiry(held.Remaining), true
		}
		return jitter(c.cfg.PollInterval), true
	case errors.Is(err, ErrExpired):
		return 0, true // a late grant: it was released; try again now
	case permanent(err), errors.Is(err, data.ErrReadOnly) && !b.answered:
		return 0, false
	default:
		b.failures++
		d := min(100*time.Millisecond<<min(b.failures-1, 10), c.cfg.PollInterval)
		return jitter(d), true
	}
}

// permanent reports whether err will not go away by retrying.
// context.DeadlineExceeded is not permanent: Wait has checked that its
// caller's ctx lives, so it is an attempt's own timeout (TTL -
// SafetyMargin), for example behind the row lock of a holder frozen inside
// its fenced transaction, and the next attempt may succeed.
func permanent(err error) bool {
	return data.Permanent(err) || errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled)
}

// Waking after a holder's expiry: at least expiryDelay after the remaining
// time the server reported, plus up to expiryJitter, so that the waiters of
// one key do not all arrive in the same millisecond but none waits a
// fraction of the TTL (a takeover lands within a few ms of the expiry).
const (
	expiryDelay  = time.Millisecond
	expiryJitter = 10 * time.Millisecond
)

// afterExpiry is how long to sleep for a lease that ends in remaining.
func afterExpiry(remaining time.Duration) time.Duration {
	return max(remaining, 0) + expiryDelay + rand.N(expiryJitter)
}

// jitter returns d plus up to 20%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/5+1)
}
