package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/lease"
)

const handoverDesc = "ask -> handed over -> asker holds: lease.Client.Ask on a session another Client's lease holds (TTL 1s); " +
	"the holder's Lease.Asked delivers the ask at once (its holder watch reads its row and the ask on the ask's notification; else at its next renewal, every TTL/3) and it hands over at once (Lease.HandOver, one transaction); " +
	"time from Ask's call to its return with the lease held"

// handoverTTL is the holder's lease: its holder watch reads its row and the
// pending ask at once on the ask's notification and delivers the ask;
// without the notification its renewals, every TTL/3, do.
const handoverTTL = time.Second

// runHandover measures asking to hand over, end to end, through the
// library: one holder Client and one asker Client, each on its own store.
// Each round: the holder takes
// the key and watches its asks; the asker asks; the holder hands over as
// soon as the ask arrives (its own time to let go is nil here); the round's
// figure is the asker's Ask call, from call to the lease held; then the
// asker releases.
func (r *run) runHandover(ctx context.Context, w workload) ([]Result, error) {
	keys := r.keys(w.name, 2)
	key, idle := keys[0], keys[1]
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	side := func(holder string, ttl time.Duration) (*lease.Client, lease.Permit, func(), error) {
		store, err := r.openStore(ctx, nil)
		if err != nil {
			return nil, lease.Permit{}, nil, err
		}
		c, err := lease.New(store, lease.Config{TTL: ttl})
		if err != nil {
			store.Close()
			return nil, lease.Permit{}, nil, err
		}
		p, err := c.Authorize(ctx, allow, key, holder)
		if err != nil {
			c.Close()
			store.Close()
			return nil, lease.Permit{}, nil, err
		}
		return c, p, func() { c.Close(); store.Close() }, nil
	}
	holderC, holderP, closeHolder, err := side("bench holder", handoverTTL)
	if err != nil {
		return nil, err
	}
	defer closeHolder()
	askerC, askerP, closeAsker, err := side("bench asker", 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer closeAsker()
	// An idle lease of the holder's Client watches its asks too, as in a
	// process that holds other sessions.
	ip, err := holderC.Authorize(ctx, allow, idle, "bench idle")
	if err != nil {
		return nil, err
	}
	il, err := holderC.Try(ctx, ip)
	if err != nil {
		return nil, fmt.Errorf("handover: idle lease: %w", err)
	}
	defer il.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; cleanup deletes bench rows
	il.Asked()
	r.checkpoint(ctx)

	round := func(ctx context.Context) (time.Duration, error) {
		return handoverRound(ctx, holderC, holderP, askerC, askerP)
	}
	h, window, err := r.measureRounds(ctx, []roundFunc{round})
	if err != nil {
		return nil, err
	}
	res := newResult(w.name, handoverDesc, h, window)
	res.Note = fmt.Sprintf("1 pair; the holder (TTL %s) answers at once", handoverTTL)
	return []Result{res}, nil
}

// handoverRound is one ask and hand-over; it returns the Ask call's time.
func handoverRound(ctx context.Context, holderC *lease.Client, holderP lease.Permit, askerC *lease.Client, askerP lease.Permit) (time.Duration, error) {
	hl, err := holderC.Try(ctx, holderP)
	if err != nil {
		return 0, fmt.Errorf("handover: holder: %w", err)
	}
	defer hl.Release(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op once handed over
	answered := make(chan error, 1)
	asks := hl.Asked()
	go func() {
		select {
		case _, ok := <-asks:
			if !ok {
				answered <- fmt.Errorf("handover: the holder's lease ended: %w", hl.Err())
				return
			}
			answered <- hl.HandOver(ctx)
		case <-ctx.Done():
			answered <- ctx.Err()
		}
	}()
	start := time.Now()
	al, err := askerC.Ask(ctx, askerP, 10*time.Second, lease.ThenRefuse)
	d := time.Since(start)
	if herr := <-answered; herr != nil && err == nil {
		err = herr
	}
	if err != nil {
		_ = al.Release(context.WithoutCancel(ctx))
		return 0, fmt.Errorf("handover: %w", err)
	}
	if err := al.Release(ctx); err != nil {
		return 0, fmt.Errorf("handover: asker release: %w", err)
	}
	return d, nil
}
