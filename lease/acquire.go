package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Try acquires p's lease for a fresh run id with one attempt: it does not
// wait (Wait does). It returns the held Lease, or an error: ErrHeld (a
// *HeldError naming the holder and its remaining TTL) when another run holds
// it, ErrExpired when the grant arrived after its own safe deadline (it is
// then released and not held), ErrNoPermit, ErrClosed, or the database's
// error.
//
// ctx bounds the attempt; the Lease's Context is not cancelled by it.
func (c *Client) Try(ctx context.Context, p Permit) (*Lease, error) {
	if err := c.check(p); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	tr := &tracker{runID: uuid.New()}
	l, err := c.try(ctx, p.req, tr, c.acquire)
	if err != nil && tr.maybeGranted() {
		c.cleanup(p.req.Key, tr.runID, tr.lastSent.Add(c.cfg.TTL-c.cfg.SafetyMargin))
	}
	return l, err
}

// tracker follows one run id across attempts. A failed attempt whose reply
// was lost may have been granted on the server; a later attempt with the
// same run id then returns that grant unchanged, so its safe deadline must
// count from the earliest such attempt, not from the latest.
type tracker struct {
	runID        uuid.UUID
	unknownSince time.Time // send time of the first attempt with an unknown outcome; zero when none
	lastSent     time.Time // send time of the latest attempt
}

func (t *tracker) maybeGranted() bool { return !t.unknownSince.IsZero() }

// grantFunc is one call that may grant req's lease to runID: an acquire
// (Client.acquire) or a preempt (Client.Preempt).
type grantFunc func(ctx context.Context, req Request, runID uuid.UUID) (data.Grant, error)

// acquire is the grantFunc of Try and Wait: lease.acquire, or
// lease.acquire_with when the request declares holder options.
func (c *Client) acquire(ctx context.Context, req Request, runID uuid.UUID) (data.Grant, error) {
	return c.store.AcquireWith(ctx, req.Key, runID, c.cfg.TTL, req.Holder, req.options())
}

// try makes one attempt with grant for tr's run id.
func (c *Client) try(ctx context.Context, req Request, tr *tracker, grant grantFunc) (*Lease, error) {
	window := c.cfg.TTL - c.cfg.SafetyMargin // a reply later than this is useless
	actx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	sent := time.Now()
	tr.lastSent = sent
	basis := sent
	if tr.maybeGranted() {
		basis = tr.unknownSince
	}
	g, err := grant(actx, req, tr.runID)
	recv := time.Now()
	if err != nil {
		c.cfg.Metrics.observeAcquire(recv.Sub(sent), err)
		if definite(err) {
			tr.unknownSince = time.Time{}
		} else if !tr.maybeGranted() {
			tr.unknownSince = sent
		}
		if ctx.Err() == nil && actx.Err() != nil {
			// err names the key already ("acquire KEY: timeout: ...").
			return nil, fmt.Errorf("no reply within TTL - safety margin (%s): %w", window, err)
		}
		return nil, err
	}
	deadline := basis.Add(window)
	if !recv.Before(deadline) {
		// Not held: release it (best effort) and never use this run id again.
		old := tr.runID
		*tr = tracker{runID: uuid.New()}
		c.cleanup(req.Key, old, time.Time{}) // the grant is there: one release
		err := fmt.Errorf("acquire %q: %w: the grant arrived %s after the request, past its safe deadline",
			req.Key.String(), ErrExpired, recv.Sub(basis).Round(time.Millisecond))
		c.cfg.Metrics.observeAcquire(recv.Sub(sent), err)
		return nil, err
	}
	c.cfg.Metrics.observeAcquire(recv.Sub(sent), nil)
	return c.start(ctx, req, tr.runID, g, basis), nil
}

// definite reports whether a failed attempt certainly granted nothing: the
// lease is held by another run, the server refused the statement, or the
// request never left this process.
func definite(err error) bool {
	return errors.Is(err, data.ErrHeld) || data.NotApplied(err)
}

// cleanup releases runID's lease on key in the background, in case an
// attempt with an unknown outcome was granted. Its reply may have been lost;
// or the attempt may still be queued on the server (behind a row lock) when
// its caller gave up, and be granted after a first release found nothing (a
// cancel request, data's default, stops it unless it arrives before the
// statement does). So a release that finds nothing is tried again, backing
// off, until until: the end of the attempts' window (TTL - SafetyMargin from
// the last one sent), after which nothing they could be granted would be
// used. Close lets them go on for closeGrace at most.
func (c *Client) cleanup(key Key, runID uuid.UUID, until time.Time) {
	release := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReleaseTimeout)
		defer cancel()
		released, _ := c.store.Release(ctx, key, runID) // best effort: otherwise it expires by itself
		return released
	}
	retry := func() {
		closing := c.closing
		for delay := cleanupRetry; !release(); delay = min(2*delay, time.Second) {
			left := time.Until(until)
			if left <= 0 {
				return
			}
			t := time.NewTimer(min(delay, left))
			select {
			case <-closing: // Close: go on for closeGrace at most
				t.Stop()
				if end := time.Now().Add(closeGrace); end.Before(until) {
					until = end
				}
				closing = nil
			case <-t.C:
			}
		}
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wg.Add(1) // under mu: never concurrently with Close's Wait
	}
	c.mu.Unlock()
	if closed {
		release()
		return
	}
	go func() {
		defer c.wg.Done()
		retry()
	}()
}

// cleanupRetry is the first pause between two clean-up releases, and
// closeGrace how long they go on once the Client is closing: an attempt
// given up as the program stops is usually still queued for a moment (its
// cancel request on the way), and a program should not wait for a TTL.
const (
	cleanupRetry = 50 * time.Millisecond
	closeGrace   = time.Second
)

// start makes the Lease for a grant whose request was sent at sent and
// starts its heartbeat.
func (c *Client) start(ctx context.Context, req Request, runID uuid.UUID, g data.Grant, sent time.Time) *Lease {
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	// The heartbeat's context ends with the lease (setLocked), Release and
	// HandOver, not with lctx: a cancel message ends lctx while the lease is
	// still held, and it is kept until Release.
	keepCtx, stopKeep := context.WithCancel(context.WithoutCancel(lctx))
	deadline := sent.Add(c.cfg.TTL - c.cfg.SafetyMargin)
	l := &Lease{
		client:   c,
		cfg:      c.cfg,
		token:    Token{Key: req.Key, RunID: runID, Fence: g.Fence},
		holder:   req.Holder,
		attach:   req.Attachment,
		ctx:      lctx,
		cancel:   cancel,
		keepCtx:  keepCtx,
		stopKeep: stopKeep,
		state:    State{Status: Held, Since: time.Now(), Deadline: deadline, ExpiresAt: g.ExpiresAt},
		changed:  make(chan struct{}, 1),
		done:     make(chan struct{}),
		early:    make(chan struct{}, 1),
		check:    make(chan struct{}, 1),
	}
	l.mu.Lock()
	l.watchdog = time.AfterFunc(time.Until(deadline), l.onDeadline)
	l.mu.Unlock()
	l.watch()       // before the heartbeat, which ends the subscription when it ends
	go l.keep(sent) // owned by the Lease: Release waits for it
	return l
}
