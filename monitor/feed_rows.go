package monitor

import (
	"context"

	"github.com/leasetop/leasetop/data"
)

// In poll mode (a hot standby, a transaction pooler without a listen DSN,
// or FeedConfig.Listener.Poll) the listener reads lease.event by id on an
// interval and hands the feed rows instead of notifications: each event
// once, in id order, with the gaps that ids which commit late leave filled
// when they commit (data.Listener.Rows). Rows are the table's own, so the
// feed queues them as they are, without reading them back. Everything else
// stays: the first resync, the delta reads of renewals (every
// DeltaInterval, since renewal notifications are not heard), and resyncs on
// request. Batch.Conn says POLL with the interval and why (Health's
// LinkPoll, Poll and PollReason).

// receiveRows queues rows a polling listener read.
func (f *Feed) receiveRows(ctx context.Context, rows []data.Event) {
	f.mu.Lock()
	awaiting := f.awaitSync
	f.mu.Unlock()
	if awaiting {
		// The coming resync reads the events above where it starts; one
		// below it (it committed long after its id was drawn) only this
		// batch delivers.
		if rows, _ = splitBelow(rows, f.resyncFrom()); len(rows) == 0 {
			return
		}
	}
	items := make([]Item, len(rows))
	for i := range rows {
		items[i] = Item{Event: &rows[i]}
	}
	f.queue(ctx, items)
}
