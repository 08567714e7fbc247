package lease

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// MessageStatus is where a message is: waiting, delivered to a run (by its
// public id, at its fence), acknowledged by one, or expired.
type MessageStatus = data.MessageStatus

// MessageState is a message's state in a MessageStatus.
type MessageState = data.MessageState

// The states of a message.
const (
	MessageWaiting   = data.MessageWaiting
	MessageDelivered = data.MessageDelivered
	MessageAcked     = data.MessageAcked
	MessageExpired   = data.MessageExpired
)

// Sent is a message Send sent: its conversation, its idempotency key (the
// one given, or the one Send made) and where it is.
type Sent struct {
	Key            Key
	IdempotencyKey string
	MessageStatus
}

// ErrNoMessage: the conversation has no message under the idempotency key
// (never sent, or deleted by the inbox's upkeep).
var ErrNoMessage = errors.New("no message under this idempotency key")

// Send sends m to the conversation of p's key, for whichever run holds it
// now, or the next one to hold it, labelled with p's Holder: only a Permit
// sends, as only a Permit competes for the lease (an Authorizer decides who
// may reach a conversation). It returns where the message is. A message is
// sent once per idempotency key: Send retries a call whose outcome it cannot
// tell (a lost reply) with the same key until ctx ends, and a retry that
// finds its first attempt's message returns it (Created false). It returns
// data.ErrMessageKeyReused when the key names another message already,
// ErrInboxFull (data.ErrInboxShareFull for the login's share) when the
// conversation may hold no more, data.ErrInvalid for a message out of its
// bounds, and ErrNoPermit, ErrClosed.
func (c *Client) Send(ctx context.Context, p Permit, m Message) (Sent, error) {
	if err := c.check(p); err != nil {
		return Sent{}, err
	}
	if c.isClosed() {
		return Sent{}, ErrClosed
	}
	if m.IdempotencyKey == "" {
		m.IdempotencyKey = uuid.NewString()
	}
	if m.TTL == 0 {
		m.TTL = DefaultMessageTTL
	}
	key := p.req.Key
	if err := data.ValidateMessage(m.Kind, m.Body, p.req.Holder, m.IdempotencyKey, m.TTL); err != nil {
		return Sent{}, err
	}
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		st, err := c.store.SendMessage(ctx, key, m.Kind, m.Body, p.req.Holder, m.IdempotencyKey, m.TTL)
		switch {
		case err == nil:
			return Sent{Key: key, IdempotencyKey: m.IdempotencyKey, MessageStatus: st}, nil
		case data.Permanent(err), errors.Is(err, ErrInboxFull), ctx.Err() != nil:
			return Sent{}, err
		}
		if err := pause(ctx, c, delay); err != nil {
			return Sent{}, err
		}
	}
}

// SendWait is Send, then WaitMessage for the message to reach until
// (MessageDelivered: delivered to a run, or acknowledged; MessageAcked:
// acknowledged): where it landed.
func (c *Client) SendWait(ctx context.Context, p Permit, m Message, until MessageState) (Sent, error) {
	if until != MessageDelivered && until != MessageAcked {
		return Sent{}, fmt.Errorf("%w: send-wait until %q: want delivered or acked", data.ErrInvalid, until)
	}
	sent, err := c.Send(ctx, p, m)
	if err != nil {
		return Sent{}, err
	}
	st, err := c.WaitMessage(ctx, sent.Key, sent.IdempotencyKey, until)
	if st.ID != 0 {
		sent.MessageStatus = st
	}
	return sent, err
}

// WaitMessage waits until key's message sent under idemKey reaches until
// (MessageDelivered or MessageAcked; an acknowledged message has been
// delivered) and returns its status. It reads the status again on each of
// the message's events (message_delivered, message_carried, message_acked,
// message_expired) that the Client's listener hears for the key, after each
// resync, and every Config.PollInterval, which also sees the message expire
// when nobody wrote its message_expired yet. It returns the status with
// ErrMessageExpired when the message expired first, ErrNoMessage when there
// is none, ErrClosed, or ctx's error.
func (c *Client) WaitMessage(ctx context.Context, key Key, idemKey string, until MessageState) (MessageStatus, error) {
	if until != MessageDelivered && until != MessageAcked {
		return MessageStatus{}, fmt.Errorf("%w: wait until %q: want delivered or acked", data.ErrInvalid, until)
	}
	var id atomic.Int64 // the message's, once read: other messages' events do not wake
	wake := make(chan struct{}, 1)
	sub, err := c.notes.listenMessages(key, func(n notice) {
		if n.resync || n.closed || (n.ev.Kind.Message() && (id.Load() == 0 || n.ev.MessageID == id.Load())) {
			signal(wake)
		}
	})
	if err != nil {
		return MessageStatus{}, err
	}
	defer c.notes.unsubscribe(sub)
	delay := 10 * time.Millisecond // backs off while the database does not answer
	for {
		st, ok, err := c.store.MessageStateOf(ctx, key, idemKey)
		switch {
		case err == nil && !ok:
			return MessageStatus{}, fmt.Errorf("%q, key %q: %w", key.String(), idemKey, ErrNoMessage)
		case err == nil:
			id.Store(st.ID)
			delay = 10 * time.Millisecond
			if st.State.Reached(until) {
				return st, nil
			}
			if st.State == MessageExpired {
				return st, fmt.Errorf("message %d of %q: %w", st.ID, key.String(), ErrMessageExpired)
			}
		case data.Permanent(err) || ctx.Err() != nil:
			return MessageStatus{}, err
		default:
			delay = min(2*delay, time.Second)
		}
		if c.isClosed() {
			return MessageStatus{}, ErrClosed
		}
		wait := c.cfg.PollInterval
		if err != nil {
			wait = delay
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return MessageStatus{}, ctx.Err()
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// pause waits d, or returns ctx's error or ErrClosed first.
func pause(ctx context.Context, c *Client, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed
	case <-t.C:
		return nil
	}
}
