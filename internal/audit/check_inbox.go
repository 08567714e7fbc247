package audit

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// message is one message of a conversation's inbox as the history shows
// it, from its message_sent event on.
type message struct {
	sent      data.Event
	to        uuid.UUID // the run it was last delivered or carried to
	toFence   int64
	ackedBy   uuid.UUID
	acked     bool
	expired   bool
	expiresAt time.Time
}

// inbox follows every message sent in the history for invariant 10.
type inbox struct {
	byID  map[int64]*message
	order []int64
}

func newInbox() *inbox { return &inbox{byID: make(map[int64]*message)} }

// messageEvent folds one inbox event in; cur is the run that holds the
// session, in the history's order, when the event committed. Invariant 10:
// a message is delivered to a run that was granted the session; it is
// carried only from the run it was last delivered to; it is acknowledged
// at most once, by the run it was last delivered to at the same fence,
// while that run held the session (lease.ack_message locks the lease row,
// so no transition of the session commits between the acknowledgement's
// check and its event); and an acknowledged message never expires, nor an
// expired one is acknowledged.
func (c *checker) messageEvent(in *inbox, e data.Event, cur *grant) {
	if !e.Kind.Message() {
		return
	}
	if e.Kind == data.KindMessageSent {
		c.tally.MessagesSent++
		in.byID[e.MessageID] = &message{sent: e, expiresAt: e.ExpiresAt}
		in.order = append(in.order, e.MessageID)
		return
	}
	m := in.byID[e.MessageID]
	if m == nil {
		return // sent before this history began
	}
	granted := func() bool {
		g := c.grants[e.RunID]
		return g != nil && g.key == e.Key && g.fence == e.Fence
	}
	switch e.Kind {
	case data.KindMessageDelivered:
		c.tally.MessagesDelivered++
		switch {
		case m.to != uuid.Nil:
			c.fail(MessagesOnce, e.Key, "message %d was delivered to run %s after it had been delivered to run %s, without a carry (event %d)",
				e.MessageID, short(e.RunID), short(m.to), e.ID)
		case !granted():
			c.fail(MessagesOnce, e.Key, "message %d was delivered to run %s (fence %d), which the history never shows holding the session (event %d)",
				e.MessageID, short(e.RunID), e.Fence, e.ID)
		}
		m.to, m.toFence = e.RunID, e.Fence
	case data.KindMessageCarried:
		c.tally.MessagesCarried++
		switch {
		case m.to != e.PrevRunID || m.toFence != e.PrevFence:
			c.fail(MessagesOnce, e.Key, "message %d was carried from run %s (fence %d), but it was last delivered to run %s (fence %d) (event %d)",
				e.MessageID, short(e.PrevRunID), e.PrevFence, short(m.to), m.toFence, e.ID)
		case !granted():
			c.fail(MessagesOnce, e.Key, "message %d was carried to run %s (fence %d), which the history never shows holding the session (event %d)",
				e.MessageID, short(e.RunID), e.Fence, e.ID)
		}
		m.to, m.toFence = e.RunID, e.Fence
	case data.KindMessageAcked:
		c.tally.MessagesAcked++
		switch {
		case m.acked:
			c.fail(MessagesOnce, e.Key, "message %d was acknowledged twice: by run %s, then by run %s (event %d)",
				e.MessageID, short(m.ackedBy), short(e.RunID), e.ID)
		case m.expired:
			c.fail(MessagesOnce, e.Key, "message %d was acknowledged by run %s after it expired (event %d)", e.MessageID, short(e.RunID), e.ID)
		case m.to != e.RunID || m.toFence != e.Fence:
			c.fail(MessagesOnce, e.Key, "message %d was acknowledged by run %s (fence %d), but it was delivered to run %s (fence %d) (event %d)",
				e.MessageID, short(e.RunID), e.Fence, short(m.to), m.toFence, e.ID)
		case cur == nil || cur.run != e.RunID:
			c.fail(MessagesOnce, e.Key, "message %d was acknowledged by run %s at %s, which did not hold the session then (event %d)",
				e.MessageID, short(e.RunID), clock(e.At), e.ID)
		}
		m.acked, m.ackedBy = true, e.RunID
	case data.KindMessageExpired:
		c.tally.MessagesExpired++
		if m.acked {
			c.fail(MessagesOnce, e.Key, "message %d expired after run %s acknowledged it (event %d)", e.MessageID, short(m.ackedBy), e.ID)
		}
		m.expired = true
	}
}

// messagesEnded checks invariant 10 from the holders' side: every
// acknowledgement a holder reported (Record.Acked) is in the history, by
// the run that reported it, and no message was reported acknowledged by
// two runs. A message neither acknowledged nor expired at the end is
// counted as waiting: its expiry was ahead, or passed with nobody left to
// write its message_expired.
func (c *checker) messagesEnded(in *inbox) {
	for _, id := range in.order {
		if m := in.byID[id]; !m.acked && !m.expired {
			c.tally.MessagesWaiting++
		}
	}
	ids := make([]int64, 0, len(c.rec.Acked))
	for id := range c.rec.Acked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		acks := c.rec.Acked[id]
		m := in.byID[id]
		if len(acks) > 1 {
			c.fail(MessagesOnce, acks[0].Key, "message %d was acknowledged by %d runs, as their holders say: %s and %s",
				id, len(acks), short(acks[0].Run), short(acks[1].Run))
		}
		for _, a := range acks {
			switch {
			case m == nil:
				c.fail(MessagesOnce, a.Key, "%s says run %s acknowledged message %d, which the history never shows sent", a.Holder, short(a.Run), id)
			case !m.acked || m.ackedBy != a.Run:
				c.fail(MessagesOnce, a.Key, "%s says run %s acknowledged message %d, but the history does not show it acknowledged by that run",
					a.Holder, short(a.Run), id)
			}
		}
	}
}
