package monitor

import (
	"slices"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// Batch is what the Feed gathered since its consumer last took one: reads
// and notifications in the order they happened, and the connection state
// now.
type Batch struct {
	// Context is the index of the context the batch is of, in a State of
	// several (Config.Contexts; Feeds sets it); 0 otherwise.
	Context int
	Items   []Item
	// Conn is the listener's connection state when the batch was taken.
	Conn data.ListenerState
	// ReadErr is the error of the latest read if it failed (nil once a read
	// succeeds again).
	ReadErr error
	// Malformed and Dropped are the listener's counters (see data.Listener).
	Malformed, Dropped int64
	// NotifyRenewals reports whether the database sends renewal
	// notifications (read at every resync).
	NotifyRenewals bool
	// ReadInterval is how often the feed reads the database now: a read
	// unanswered for longer than this plus NoAnswerAfter means the feed
	// cannot reach it (Health).
	ReadInterval time.Duration
	// RenewalsAge is how old the view of a renewal may be beyond
	// ReadInterval: the time the feed takes to read the whole lease table
	// once it reads it a slice at a time (FeedConfig.SweepPages); 0 while
	// every read reads it all.
	RenewalsAge time.Duration
}

// Item is one thing that happened: exactly one of its pointers is set.
type Item struct {
	// Sync is a resync: every lease and the events since an id.
	Sync *data.Sync
	// Event is one notification (a transition, or a renewal with ID 0).
	Event *data.Event
	// Delta is a periodic read of the leases renewed since the previous one.
	Delta *data.Snapshot
	// At is the local time the item was read or received.
	At time.Time

	// table is a Feed's resync's leases, which it read straight into
	// columns (Sync then holds none). The State applying the item takes it
	// (resyncTable).
	table *resyncTable
}

// Clone returns a copy of b that another State can apply: the State that
// applies a Feed's resync takes the leases it read, without copying them,
// so a batch is applied to one State. Clone it before it is applied.
func (b Batch) Clone() Batch {
	c := b
	c.Items = slices.Clone(b.Items)
	for i, it := range c.Items {
		if it.table != nil {
			c.Items[i].table = it.table.copy()
		}
	}
	return c
}
