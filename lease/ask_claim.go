package lease

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// askerWatch is an Ask's subscription to its key, a holder's kind (without
// the catch-up: Ask asks again every PollInterval and at its deadline, so a
// notification a dead notifier never sent costs it at most that): so an Ask
// on a Client that already listens (it holds other sessions) uses the
// running listener, where a waiter's subscription would restart it with
// the catch-up, a new connection whose start the hand-over then waits for.
// It wakes the ask on the
// events asksWake names (and on a resync or the Client closing), and marks
// a handed_over event naming the ask's run as the new holder, or a resync
// (the listener has just started: the hand-over may have come before it
// listened; Ask's own listener starts with the Ask), so that the ask claims
// the lease first, in one round trip (claimNotified), instead of asking
// again first and then claiming. The mark is only a hint (anyone may
// NOTIFY): the claim's renewal decides, and where the row does not name
// the run it is a read that writes nothing.
type askerWatch struct {
	sub    *subscription
	wake   chan struct{}
	handed atomic.Bool // claim first: a handed_over naming the run, or a resync
}

// watchAsk subscribes an ask of the run whose public id is pub to key.
func (c *Client) watchAsk(key Key, pub uuid.UUID) (*askerWatch, error) {
	w := &askerWatch{wake: make(chan struct{}, 1)}
	sub, err := c.notes.watch(key, func(n notice) {
		switch {
		case n.closed:
		case n.resync || n.ev.Kind == data.KindHandedOver && n.ev.RunID == pub:
			w.handed.Store(true)
		case !asksWake(n.ev.Kind):
			return
		}
		signal(w.wake)
	})
	if err != nil {
		return nil, err
	}
	w.sub = sub
	return w, nil
}

// claimNotified claims the lease a handed_over notification says was
// handed to this run (or that a resync may have missed): one renewal that
// also reads the row's fence
// (data.Store.ClaimHandedOver). Any error (not handed over after all, a
// login that may not read the row, no answer) leaves the ask as it was: the
// caller asks again, and that answer decides.
func (a *asking) claimNotified(ctx context.Context) (*Lease, error) {
	c, req, run := a.c, a.p.req, a.tr.runID
	l, err := a.claimBy(ctx, func(ctx context.Context) (data.Grant, error) {
		return c.store.ClaimHandedOver(ctx, req.Key, run, c.cfg.TTL)
	})
	if err == nil {
		c.notes.claims.Add(1)
	}
	return l, err
}

// claimBy claims the lease handed over to this run with call, a renewal
// that returns the grant. The lease's local deadline counts from the time
// taken just before call was sent, never from an expiry someone else gave
// the row: the renewal makes the row outlast sent + TTL.
func (a *asking) claimBy(ctx context.Context, call func(context.Context) (data.Grant, error)) (*Lease, error) {
	c, req := a.c, a.p.req
	window := c.cfg.TTL - c.cfg.SafetyMargin
	rctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	sent := time.Now()
	g, err := call(rctx)
	if err != nil {
		return nil, fmt.Errorf("claim the lease %q handed over: %w", req.Key.String(), err)
	}
	if !time.Now().Before(sent.Add(window)) {
		return nil, fmt.Errorf("claim the lease %q handed over: %w: the renewal arrived past its safe deadline", req.Key.String(), ErrExpired)
	}
	a.asked = false
	return c.start(ctx, req, a.tr.runID, g, sent), nil
}
