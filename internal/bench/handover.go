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
	keys := r.keys(w.name, 3)
	key, idle, askerIdle := keys[0], keys[1], keys[2]
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
	il, err := idleLease(ctx, holderC, idle, "bench idle")
	if err != nil {
		return nil, err
	}
	defer il.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; cleanup deletes bench rows
	il.Asked()
	r.checkpoint(ctx)

	round := func(ctx context.Context) ([]time.Duration, error) {
		return handoverRound(ctx, holderC, holderP, askerC, askerP)
	}
	out, err := r.measureHandover(ctx, w.name, round, fmt.Sprintf("1 pair; the holder (TTL %s) answers at once; the asker's Client listens only while it asks", handoverTTL))
	if err != nil {
		return nil, err
	}
	// Again with an asker whose Client listens already (it holds another
	// session, as a backend does): its Ask uses the running listener.
	al, err := idleLease(ctx, askerC, askerIdle, "bench asker idle")
	if err != nil {
		return nil, err
	}
	defer al.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; cleanup deletes bench rows
	warm, err := r.measureHandover(ctx, w.name+" listening", round, "the same; the asker's Client listens already (it holds another session)")
	if err != nil {
		return nil, err
	}
	return append(out, warm...), nil
}

// idleLease takes key for c, labelled holder: a lease that keeps c's
// listener running, as another session of the same process would.
func idleLease(ctx context.Context, c *lease.Client, key lease.Key, holder string) (*lease.Lease, error) {
	p, err := c.Authorize(ctx, allowBench, key, holder)
	if err != nil {
		return nil, err
	}
	l, err := c.Try(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("handover: idle lease %q: %w", holder, err)
	}
	return l, nil
}

// measureHandover measures round and returns its line, named name, and
// one line per part (handoverParts).
func (r *run) measureHandover(ctx context.Context, name string, round partsFunc, note string) ([]Result, error) {
	hs, window, err := r.measureParts(ctx, []partsFunc{round}, len(handoverParts)+1)
	if err != nil {
		return nil, err
	}
	res := newResult(name, handoverDesc, hs[0], window)
	res.Note = note
	out := []Result{res}
	for i, p := range handoverParts {
		part := newResult(name+" "+p.name, p.desc, hs[i+1], 0)
		part.Note = "part of each round"
		out = append(out, part)
	}
	return out, nil
}

// handoverParts are the parts of a hand-over round the bench prints below
// its total, in the order handoverRound returns them. The holder's own time
// to let go is the time from Asked's delivery to its HandOver call: nil in
// this bench (it calls HandOver at once), so ask -> handed over is all
// protocol, and handed over -> asker holds is the asker's side alone.
var handoverParts = []struct{ name, desc string }{
	{"ask->handed-over", "from Ask's call to the holder's HandOver returned (the holder's own time to let go, nil here, would be in it)"},
	{"handed-over->holds", "from the holder's HandOver returned to Ask's return with the lease held (0 when Ask returned first)"},
	{"ask->told", "from Ask's call to the holder's Lease.Asked delivering the ask"},
	{"handover-call", "the holder's Lease.HandOver call (one transaction)"},
}

// handoverRound is one ask and hand-over; it returns the Ask call's time,
// then the parts named by handoverParts.
func handoverRound(ctx context.Context, holderC *lease.Client, holderP lease.Permit, askerC *lease.Client, askerP lease.Permit) ([]time.Duration, error) {
	hl, err := holderC.Try(ctx, holderP)
	if err != nil {
		return nil, fmt.Errorf("handover: holder: %w", err)
	}
	defer hl.Release(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op once handed over
	var told, handed time.Time                   // the holder's: read after answered
	answered := make(chan error, 1)
	asks := hl.Asked()
	go func() {
		select {
		case _, ok := <-asks:
			if !ok {
				answered <- fmt.Errorf("handover: the holder's lease ended: %w", hl.Err())
				return
			}
			told = time.Now()
			err := hl.HandOver(ctx)
			handed = time.Now()
			answered <- err
		case <-ctx.Done():
			answered <- ctx.Err()
		}
	}()
	start := time.Now()
	al, err := askerC.Ask(ctx, askerP, 10*time.Second, lease.BusyRefuse)
	end := time.Now()
	if herr := <-answered; herr != nil && err == nil {
		err = herr
	}
	if err != nil {
		_ = al.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("handover: %w", err)
	}
	if err := al.Release(ctx); err != nil {
		return nil, fmt.Errorf("handover: asker release: %w", err)
	}
	return []time.Duration{end.Sub(start), handed.Sub(start), end.Sub(handed), told.Sub(start), handed.Sub(told)}, nil
}
