package lease

import "time"

// SetBatchHook has c call f before each batch of renewals it sends: n
// renewals in one call (RenewMany; Renew for a batch of one), sent at sent.
// Set it before the first lease.
func SetBatchHook(c *Client, f func(n int, sent time.Time)) { c.renewer.onBatch = f }

// SetBatchAnsweredHook has c call f when the call of each batch of
// renewals has returned: n renewals, sent at sent (as SetBatchHook's f was
// told), and the call's error. Set it before the first lease.
func SetBatchAnsweredHook(c *Client, f func(n int, sent time.Time, err error)) {
	c.renewer.onAnswered = f
}

// SetSettleHook has c call f when a lease that is ending (released or
// lost) waits for the batch that carries its renewal to answer, before
// its release may reach the server. Set it before the first lease.
func SetSettleHook(c *Client, f func(key Key)) { c.renewer.onSettle = f }

// InboxReads is how many receives l's inbox watch has had answered.
func InboxReads(l *Lease) int64 { return l.inbox.reads.Load() }

// SetAckHook has l call f with the ids of each acknowledgement call
// (Message.Ack's joined calls) before it is made. Set it before the first
// Ack.
func SetAckHook(l *Lease, f func(ids []int64)) { l.acks.onCall = f }

// AckCallLimit is how many acknowledgement calls c's leases make at once.
func AckCallLimit(c *Client) int { return cap(c.ackCalls) }

// AcksWaiting is how many of l's Acks wait for the next call.
func AcksWaiting(l *Lease) int {
	l.acks.mu.Lock()
	defer l.acks.mu.Unlock()
	return len(l.acks.waiting)
}
