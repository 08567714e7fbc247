package data

import (
	"context"
	"sync"
)

// Origin says where the events of a Delivery come from.
type Origin int

// The origins of events.
const (
	// FromNotify: notifications. Anyone who may connect can NOTIFY, so each
	// is a claim: read it back from lease.event before believing it, and
	// report the ids found missing with Listener.Missing. Renewal
	// notifications (KindRenewed, ID 0) come this way only.
	FromNotify Origin = iota
	// FromCatchUp: rows of lease.event whose notification never came (the
	// process that committed them died before notifying), read by a
	// listening listener (ListenerConfig.CatchUp).
	FromCatchUp
	// FromPoll: rows of lease.event read in poll mode, each once, oldest id
	// first.
	FromPoll
)

func (s Origin) String() string {
	switch s {
	case FromNotify:
		return "notify"
	case FromCatchUp:
		return "catch-up"
	default:
		return "poll"
	}
}

// Delivery is what a Listener delivers, in order: either a resync marker or
// events from one source.
type Delivery struct {
	// Resync: re-read the snapshot and the events since the last one seen,
	// because something may have been missed: the listener has just started
	// listening or polling, or reconnected, or dropped notifications its
	// consumer had no room for, or (polling) read a truncation. A resync
	// batch carries no events.
	Resync bool
	// Origin says where Events come from (meaningless with Resync).
	Origin Origin
	// Events, in the order the listener got them: notifications in the
	// order sent, rows by id.
	Events []Event
}

// outbox holds what a Listener has not handed to its consumer yet, and
// applies the one backpressure rule: at most limit events wait (pending or
// being handed over). A notification that finds no room is dropped and a
// resync marker takes its place; rows read from lease.event are never
// dropped: their reader waits for room (the catch-up keeps the row and tries
// again, poll mode reads only as many rows as there is room for).
type outbox struct {
	mu      sync.Mutex
	pending []Delivery
	n       int // events pending or being handed over
	limit   int
	ready   chan struct{} // something was added
}

func newOutbox(limit int) *outbox {
	return &outbox{limit: limit, ready: make(chan struct{}, 1)}
}

// push queues evs from src, all or none, and reports whether there was
// room; with force it queues them anyway (poll mode's rows, read for the
// room there was, and the gaps that filled meanwhile).
func (o *outbox) push(src Origin, evs []Event, force bool) bool {
	if len(evs) == 0 {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !force && o.n+len(evs) > o.limit {
		return false
	}
	o.n += len(evs)
	if k := len(o.pending) - 1; k >= 0 && !o.pending[k].Resync && o.pending[k].Origin == src {
		o.pending[k].Events = append(o.pending[k].Events, evs...)
	} else {
		o.pending = append(o.pending, Delivery{Origin: src, Events: append([]Event(nil), evs...)})
	}
	signal(o.ready)
	return true
}

// resync queues a resync marker, unless the last thing queued is one.
func (o *outbox) resync() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if k := len(o.pending) - 1; k >= 0 && o.pending[k].Resync {
		return
	}
	o.pending = append(o.pending, Delivery{Resync: true})
	signal(o.ready)
}

// room returns how many more events may be queued.
func (o *outbox) room() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return max(o.limit-o.n, 0)
}

// take removes the oldest pending batch; it counts against the limit until
// handed.
func (o *outbox) take() (Delivery, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 {
		return Delivery{}, false
	}
	b := o.pending[0]
	o.pending[0] = Delivery{}
	o.pending = o.pending[1:]
	return b, true
}

// handed records that b reached the consumer.
func (o *outbox) handed(b Delivery) {
	o.mu.Lock()
	o.n -= len(b.Events)
	o.mu.Unlock()
}

// pump hands the outbox's batches to out, one at a time, until ctx ends.
// While the consumer is busy, what arrives from one source gathers into one
// batch.
func (o *outbox) pump(ctx context.Context, out chan<- Delivery) {
	for {
		b, ok := o.take()
		if !ok {
			select {
			case <-o.ready:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case out <- b:
			o.handed(b)
		case <-ctx.Done():
			o.unTake(b)
			return
		}
	}
}

// unTake puts back a batch that was taken and not handed, so that a
// listener run again (Run after Run) still delivers it.
func (o *outbox) unTake(b Delivery) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = append([]Delivery{b}, o.pending...)
}
