package audit

import (
	"strings"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// ticket is one queue ticket of a session as the history shows it: joined
// (its event id orders the queue) and, once it left, why.
type ticket struct {
	run    uuid.UUID
	joined int64  // the queue_joined event's id
	left   string // the queue_left event's reason: granted, cancelled, expired, "cleared: why" ("": never left)
}

// queueGrant is a grant (acquired or taken over) made while tickets were
// open in its session's queue.
type queueGrant struct {
	ev   data.Event
	open []*ticket
}

// queues follows each session's queue through the history and checks
// invariant 6 at the end: no grant to a run while a ticket ahead of it
// (any open ticket, for a run without one) was live. A ticket that left as
// granted, cancelled or cleared (by an operator) was live until then (an
// expired ticket leaves as expired: renewing it cannot revive it); one that
// left as expired, or never left, may have been dead at the grant and is
// not held against it.
// A preempt takes the lease without queueing on purpose and is not judged.
type queues struct {
	open    map[data.Key][]*ticket
	tickets map[uuid.UUID]*ticket
	grants  []queueGrant
}

func newQueues() *queues {
	return &queues{open: make(map[data.Key][]*ticket), tickets: make(map[uuid.UUID]*ticket)}
}

// event folds one event in.
func (q *queues) event(e data.Event) {
	switch e.Kind {
	case data.KindQueueJoined:
		t := &ticket{run: e.RunID, joined: e.ID}
		q.tickets[e.RunID] = t
		q.open[e.Key] = append(q.open[e.Key], t)
	case data.KindQueueLeft:
		open := q.open[e.Key]
		for i, t := range open {
			if t.run == e.RunID {
				t.left = e.Reason
				q.open[e.Key] = append(open[:i:i], open[i+1:]...)
				break
			}
		}
	case data.KindAcquired, data.KindTakenOver:
		var ahead []*ticket
		own := q.tickets[e.RunID]
		for _, t := range q.open[e.Key] {
			if t.run != e.RunID && (own == nil || t.joined < own.joined) {
				ahead = append(ahead, t)
			}
		}
		if len(ahead) > 0 {
			q.grants = append(q.grants, queueGrant{ev: e, open: ahead})
		}
	}
}

// check reports every grant that jumped a live ticket.
func (c *checker) checkQueues(q *queues) {
	for _, g := range q.grants {
		for _, t := range g.open {
			if t.leftLive() {
				c.fail(QueueOrder, g.ev.Key, "run %s (%s, fence %d) was granted the session (event %d) while run %s's ticket, ahead of it, was live (it later left the queue: %s)",
					short(g.ev.RunID), g.ev.Holder, g.ev.Fence, g.ev.ID, short(t.run), t.left)
			}
		}
	}
}

// leftLive reports whether the ticket was live until it left: granted,
// cancelled, or cleared by an operator (lease.clear_queue).
func (t *ticket) leftLive() bool {
	return t.left == "granted" || t.left == "cancelled" || strings.HasPrefix(t.left, "cleared")
}
