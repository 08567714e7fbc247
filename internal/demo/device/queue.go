package device

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/leasetop/leasetop/lease"
)

// queue is a busy conversation's user who takes a ticket and waits its turn
// (lease.Client.Queue) until granted or its patience runs out; why says
// why it queues when it is not a plain busy (a preempt refused). While it
// waits it reports its place, read from the queue itself.
func (d *deviceProcess) queue(ctx context.Context, permit lease.Permit, held *lease.HeldError, why string, p press, rng *rand.Rand) {
	key := permit.Request().Key
	d.out.report(Report{Kind: ReportQueued, Session: key.Session, Holder: held.Holder, Place: held.Queued + 1, Cause: why})
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, d.timing.patience)
	defer cancel()
	watchCtx, stopWatch := context.WithCancel(qctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.watchPlace(watchCtx, key, held.Holder, held.Queued+1)
	}()
	l, err := d.client.Queue(qctx, permit)
	stopWatch()
	<-done
	waited := time.Since(start)
	switch {
	case err == nil:
		d.execute(ctx, l, rng, runStart{waited: waited, queued: true, paying: p.paying})
	case ctx.Err() != nil: // the device is stopping
	case errors.Is(err, context.DeadlineExceeded):
		d.out.report(Report{Kind: ReportGaveUp, Session: key.Session, Waited: waited, Queued: true})
	default:
		d.fail(key.Session, err)
	}
}

// watchPlace reports the device's place in key's queue when it changes,
// every chunk until ctx ends. The device's ticket is the one with its
// holder label: a device queues once per conversation at a time.
func (d *deviceProcess) watchPlace(ctx context.Context, key lease.Key, owner string, place int) {
	for sleep(ctx, d.timing.chunk/2) {
		tickets, err := d.store.QueueOf(ctx, key)
		if err != nil {
			continue
		}
		for i, t := range tickets {
			if t.Holder == d.holder && i+1 != place {
				place = i + 1
				d.out.report(Report{Kind: ReportQueued, Session: key.Session, Holder: owner, Place: place})
			}
		}
	}
}
