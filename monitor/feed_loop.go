package monitor

import (
	"context"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// feedLoop is a Feed's handler of its listener (data.Listener.Serve): the
// deliveries, the resyncs asked for (Resync: Wake) and the feed's own
// timed work (Timer): the periodic read every interval, and an owed resync
// once MinResyncInterval has passed since the last one started. Serve
// calls it on one goroutine, which owns these fields.
type feedLoop struct {
	f   *Feed
	lis *data.Listener

	timer      *time.Timer // fires at the earlier of nextRead and owedAt
	interval   time.Duration
	nextRead   time.Time // the next periodic read (a delta read, or an owed resync)
	needResync bool      // a resync is owed: the last one failed (retried after MinResyncInterval), or it waits
	last       time.Time // when the last resync started
	owedAt     time.Time // an owed resync is due then; zero: none waits
}

func newFeedLoop(f *Feed, lis *data.Listener) *feedLoop {
	l := &feedLoop{f: f, lis: lis, interval: f.cfg.DeltaInterval, timer: time.NewTimer(time.Hour)}
	l.nextRead = time.Now().Add(l.interval)
	l.arm()
	return l
}

// HandleDelivery queues events, or resyncs after a resync marker.
func (l *feedLoop) HandleDelivery(ctx context.Context, d data.Delivery) {
	if !d.Resync {
		l.f.receive(ctx, d, l.lis)
		return
	}
	l.f.noteDrops(l.lis)
	l.resync(ctx)
}

// HandleState reports the listener's state in the next batch.
func (l *feedLoop) HandleState(_ context.Context, st data.ListenerState) { l.f.setConn(st, l.lis) }

// Wake receives the resyncs asked for (Feed.Resync).
func (l *feedLoop) Wake() <-chan struct{} { return l.f.resyncReq }

// HandleWake resyncs as asked.
func (l *feedLoop) HandleWake(ctx context.Context) { l.resync(ctx) }

// Timer fires when a periodic read or an owed resync is due.
func (l *feedLoop) Timer() <-chan time.Time { return l.timer.C }

// HandleTimer runs what is due: an owed resync once its wait is over, and
// the periodic read, which is a delta read of the renewals unless a resync
// is owed.
func (l *feedLoop) HandleTimer(ctx context.Context) {
	now := time.Now()
	owed := !l.owedAt.IsZero() && !now.Before(l.owedAt)
	read := !now.Before(l.nextRead)
	if read {
		l.nextRead = now.Add(l.interval)
	}
	switch {
	case owed:
		l.owedAt = time.Time{}
		l.resync(ctx)
	case read && !l.needResync:
		l.f.delta(ctx)
	case read:
		l.resync(ctx)
	}
	l.arm()
}

// resync starts a resync unless one started less than MinResyncInterval
// ago (and the last was not cut at ResyncLimit, which pages on at once):
// then it is owed, and runs when the interval is over. A failed one is
// owed again, after MinResyncInterval: until a resync succeeds nothing
// reads the events whose notifications could not be read back.
func (l *feedLoop) resync(ctx context.Context) {
	f := l.f
	defer l.arm()
	if left := f.cfg.MinResyncInterval - time.Since(l.last); left > 0 && !f.paging() {
		l.needResync = true
		if l.owedAt.IsZero() {
			l.owedAt = time.Now().Add(left)
		}
		return
	}
	l.last = time.Now()
	l.needResync = !f.resync(ctx)
	if l.needResync && l.owedAt.IsZero() {
		l.owedAt = time.Now().Add(f.cfg.MinResyncInterval)
	}
	if want := f.interval(); want != l.interval {
		l.interval = want
		l.nextRead = time.Now().Add(want)
	}
}

// arm sets the timer to the earlier of the next periodic read and an owed
// resync.
func (l *feedLoop) arm() {
	at := l.nextRead
	if !l.owedAt.IsZero() && l.owedAt.Before(at) {
		at = l.owedAt
	}
	l.timer.Reset(max(time.Until(at), 0))
}
