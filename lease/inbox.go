package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// MessageKind is what a message asks of the run that holds its
// conversation: SteerMessage or CancelMessage.
type MessageKind = data.MessageKind

// The kinds of message.
const (
	// SteerMessage is text for the run's next turn ("also check the March
	// invoices"), delivered on Lease.Messages.
	SteerMessage = data.MessageSteer
	// CancelMessage asks the run to stop. A run that reads its messages
	// acknowledges it and its Context ends with a *CancelledError
	// (ErrCancelled); it is not delivered on Lease.Messages.
	CancelMessage = data.MessageCancel
)

// DefaultMessageTTL is how long a message waits to be acknowledged when
// Message.TTL is zero: then it expires, and no run receives it any more.
const DefaultMessageTTL = 15 * time.Minute

// Message is one message to a conversation: what a sender gives
// Client.Send (Kind, Body, IdempotencyKey, TTL), and what the run holding
// the conversation receives on Lease.Messages, with the rest filled in.
// Body and Sender are untrusted text.
type Message struct {
	Kind MessageKind
	// Body is one line of text (at most data.MaxMessageBytes; no control,
	// bidirectional or invisible characters): a steer's may not be empty,
	// a cancel's may say why.
	Body string
	// IdempotencyKey names the message in its conversation: sending again
	// with the same key and body is the same message (nothing new is
	// written), another body under it is refused (data.ErrMessageKeyReused).
	// Empty: Send makes a random one.
	IdempotencyKey string
	// TTL is how long the message waits to be acknowledged before it
	// expires (at most 24 h). Zero: DefaultMessageTTL.
	TTL time.Duration

	// Set on a message received by Lease.Messages.
	Key Key
	ID  int64 // orders the conversation's messages
	// Sender is the sender's label (its Permit's Holder), Login its
	// database login.
	Sender, Login     string
	SentAt, ExpiresAt time.Time // on the database clock
	// CarriedFrom is the public run id of the run this message was
	// delivered to before, which ended without acknowledging it; zero on a
	// first delivery.
	CarriedFrom uuid.UUID

	lease *Lease
}

// Errors of the inbox.
var (
	// ErrMessageExpired: the message passed its expiry unacknowledged: no
	// run receives it any more, and an Ack is refused.
	ErrMessageExpired = errors.New("the message expired unacknowledged")
	// ErrNotDelivered: Ack of a message this run did not receive (or that
	// another run acknowledged).
	ErrNotDelivered = errors.New("the message was not delivered to this run")
	// ErrInboxFull: the conversation's inbox holds as many live messages as
	// it may, or the sender's login its share of them
	// (data.ErrInboxShareFull); nothing was sent.
	ErrInboxFull = data.ErrInboxFull
)

// Ack acknowledges the message for the run that received it, under its
// fence: the sender sees it acked by this run, and no other run receives
// it. Acknowledging again is nil, so Ack retries a call whose outcome it
// cannot tell (the database unreachable, a reply lost) until ctx ends. It
// returns ErrMessageExpired past the message's expiry, and the lease's cause
// (or an ErrRejected) when the run no longer holds the lease: the message
// then goes to the next holder. A message whose delivery the database lost
// (a receive does not wait for its WAL flush: a crash or a failover can
// take it back) is received again for this run and then acknowledged.
//
// Acks of one lease that are called while another of its acknowledgements
// is in flight are joined into the next call, one transaction for all of
// them (data.Store.AckMessages: one commit, one WAL flush), as the
// keep-alive joins renewals: a program may acknowledge each message from
// a goroutine of its own and pay one flush per batch, not per message. Each
// Ack still returns once its own message is acknowledged (or refused). The
// acknowledgement calls of all a Client's leases hold at most half its
// store's connections at once (at least one): a call holds its connection
// through its WAL flush, and without the bound a holder of many busy
// conversations spends its pool on them while its receives, which deliver
// the next messages, wait for a connection; the Acks that wait for a call
// join it.
func (m Message) Ack(ctx context.Context) error {
	l := m.lease
	if l == nil {
		return ErrNotDelivered
	}
	redelivered := false
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		out, err := l.ackJoined(ctx, m.ID)
		switch {
		case errors.Is(err, data.ErrNotHeld):
			if cause := l.Err(); cause != nil {
				return cause
			}
			return fmt.Errorf("lease %q: %w: the database says this run no longer holds it", l.token.Key.String(), ErrRejected)
		case err != nil && (data.Permanent(err) || ctx.Err() != nil):
			return err
		case err != nil:
			if err := pause(ctx, l.client, delay); err != nil {
				return err
			}
			continue
		}
		switch out {
		case data.AckDone, data.AckBefore:
			return nil
		case data.AckExpired:
			return fmt.Errorf("message %d of %q: %w", m.ID, l.token.Key.String(), ErrMessageExpired)
		}
		if !redelivered && l.redeliver(ctx, m.ID) {
			redelivered = true // its delivery was lost: recorded again, acknowledge again
			continue
		}
		return fmt.Errorf("message %d of %q: %w", m.ID, l.token.Key.String(), ErrNotDelivered)
	}
}

// redeliver records the delivery of message id, which this lease handed
// on, to this run again, when the database lost it: a receive commits
// without waiting for its WAL flush, so a crash or a failover can take it
// back after the message was handed on, and the inbox watch reads on after
// it. It receives the first live message from id on and reports whether
// that is id.
func (l *Lease) redeliver(ctx context.Context, id int64) bool {
	if id < 1 {
		return false
	}
	ms, err := l.client.store.ReceiveMessages(ctx, l.token.Key, l.token.RunID, id-1, 1)
	return err == nil && len(ms) == 1 && ms[0].ID == id
}

// ackQueue joins a lease's concurrent acknowledgements: the Acks that
// arrive while a call is in flight wait in it, and the next call takes
// them all (at most data.MaxAckMany). Group commit, without a timer: an
// Ack alone is sent at once.
type ackQueue struct {
	mu      sync.Mutex
	waiting []*ackWait
	busy    bool              // a goroutine is sending the calls (sendAcks)
	onCall  func(ids []int64) // before each call, when set (tests)
}

// ackWait is one Ack waiting for its call: the message's id and where its
// outcome goes.
type ackWait struct {
	id   int64
	done chan ackResult // buffered: the sender never waits for the Ack
}

// ackResult is a call's answer for one message.
type ackResult struct {
	out data.AckOutcome
	err error
}

// ackJoined acknowledges message id in the lease's next acknowledgement
// call, with whatever other Acks of the lease wait for it, and returns its
// outcome, or the call's error (ctx's when ctx ends first: the outcome is
// then unknown, as for a call cut off).
func (l *Lease) ackJoined(ctx context.Context, id int64) (data.AckOutcome, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	w := &ackWait{id: id, done: make(chan ackResult, 1)}
	q := &l.acks
	q.mu.Lock()
	q.waiting = append(q.waiting, w)
	start := !q.busy
	q.busy = true
	q.mu.Unlock()
	if start {
		go l.sendAcks()
	}
	select {
	case r := <-w.done:
		return r.out, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// sendAcks makes the lease's acknowledgement calls until no Ack waits: each
// call takes every Ack waiting when it starts (at most data.MaxAckMany), so
// the Acks that arrive during a call, or while it waits for one of the
// Client's calls to end (Client.ackCalls), go together in the next. A call is
// bounded by the Config's RenewTimeout, not by any one Ack's context: it
// answers them all (an Ack whose context ended has stopped waiting; its
// message is acknowledged all the same, as by a call cut off after its
// commit).
func (l *Lease) sendAcks() {
	q := &l.acks
	for {
		q.mu.Lock()
		if len(q.waiting) == 0 {
			q.busy = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		// A call of the Client's may start once another ends: the Acks
		// that arrive meanwhile join this one. Only this goroutine takes
		// from q.waiting, so what waits still does.
		l.client.ackCalls <- struct{}{}
		q.mu.Lock()
		n := min(len(q.waiting), data.MaxAckMany)
		batch := q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		q.mu.Unlock()
		ids := make([]int64, 0, len(batch))
		seen := make(map[int64]bool, len(batch))
		for _, w := range batch {
			if !seen[w.id] {
				seen[w.id] = true
				ids = append(ids, w.id)
			}
		}
		if q.onCall != nil {
			q.onCall(ids)
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.RenewTimeout)
		outs, err := l.client.store.AckMessages(ctx, l.token.Key, l.token.RunID, ids)
		cancel()
		<-l.client.ackCalls
		for _, w := range batch {
			r := ackResult{err: err}
			if err == nil {
				r.out = outs[w.id]
				if r.out == "" {
					r.out = data.AckNotDelivered
				}
			}
			w.done <- r
		}
	}
}

// Messages delivers the steers sent to this lease's conversation
// (Client.Send) while this run holds it, each once, in the order they were
// sent, and is closed when the lease ends or a cancel stopped it. Acknowledge each with Message.Ack once it is handled;
// one left unacknowledged when the run ends goes to the next run that holds
// the conversation. The first call starts watching the inbox: it reads what
// waits, then reads again at once on each message_sent notification for the
// key (through the Client's one listener, read back first), after every
// resync of the listener, and at every renewal, in case a notification was
// lost. A lease that never calls Messages reads nothing.
//
// A cancel (CancelMessage) is not delivered: the lease acknowledges it and
// ends its Context with a *CancelledError naming the sender; the run must
// stop, as for a loss, and release (Do does). Messages sent after it wait
// for the next run. The channel holds data.MessageLimit messages; the
// watch waits for room (and receives nothing more) while it is full.
func (l *Lease) Messages() <-chan Message {
	w := &l.inbox
	w.once.Do(func() {
		w.ch = make(chan Message, data.MessageLimit)
		w.wake = make(chan struct{}, 1)
		w.done = make(chan struct{})
		w.watching.Store(true)
		go l.watchInbox()
	})
	return w.ch
}

// inboxWatch is a Lease's watch of its conversation's inbox, started by
// Messages.
type inboxWatch struct {
	once     sync.Once
	watching atomic.Bool   // Messages was called
	ch       chan Message  // closed when the watch ends
	wake     chan struct{} // read now: a notification, a resync, a renewal
	done     chan struct{} // closed when the watch has ended
	reads    atomic.Int64  // the receives the database answered (tests)
}

// wakeInbox asks the inbox watch to read now, when there is one.
func (l *Lease) wakeInbox() {
	if l.inbox.watching.Load() {
		signal(l.inbox.wake)
	}
}

// watchInbox is the inbox watch: it reads the messages after the last one
// it handed on, whenever woken, until the lease's heartbeat ends or a
// cancel stops it.
func (l *Lease) watchInbox() {
	w := &l.inbox
	defer close(w.done)
	defer close(w.ch)
	var after int64 // the last id handed on: each message once per run
	for {
		more, stop := l.readInbox(&after)
		if stop {
			return
		}
		if more {
			continue
		}
		select {
		case <-l.keepCtx.Done():
			return
		case <-w.wake:
		}
	}
}

// readInbox receives the messages after *after, hands the steers on and
// acts on a cancel. It reports whether more may be waiting (a full read),
// and whether the watch must stop (the lease ended, or a cancel).
func (l *Lease) readInbox(after *int64) (more, stop bool) {
	ctx, cancel := context.WithTimeout(l.keepCtx, l.cfg.RenewTimeout)
	ms, err := l.client.store.ReceiveMessages(ctx, l.token.Key, l.token.RunID, *after, data.MaxReceive)
	cancel()
	switch {
	case l.keepCtx.Err() != nil:
		return false, true
	case errors.Is(err, data.ErrNotHeld):
		signal(l.check) // the lease ended: the holder watch finds out why
		return false, false
	case err != nil:
		return false, false // read again at the next wake (a renewal, at the latest)
	}
	l.inbox.reads.Add(1)
	for _, dm := range ms {
		if dm.ID <= *after {
			continue // handed on already in this run
		}
		*after = dm.ID
		m := Message{Kind: dm.Kind, Body: dm.Body, Key: dm.Key, ID: dm.ID,
			Sender: dm.Sender, Login: dm.Actor, SentAt: dm.SentAt, ExpiresAt: dm.ExpiresAt,
			CarriedFrom: dm.CarriedFrom, lease: l}
		if m.Kind == CancelMessage {
			if l.cancelledBy(m) {
				return false, true
			}
			continue // expired meanwhile: no cancel
		}
		select {
		case l.inbox.ch <- m:
		case <-l.keepCtx.Done():
			return false, true
		}
	}
	return len(ms) == data.MaxReceive, false
}

// cancelledBy acknowledges the cancel m and then ends the lease's Context
// with a *CancelledError, and reports true; false when m expired first (it
// cancels nothing). The acknowledgement is retried until it is answered or
// the heartbeat ends: a cancel left unacknowledged would go to the next run
// and stop it too, so the Context ends only once the database recorded it
// as this run's.
func (l *Lease) cancelledBy(m Message) bool {
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		ctx, cancel := context.WithTimeout(l.keepCtx, l.cfg.RenewTimeout)
		out, err := l.client.store.AckMessage(ctx, l.token.Key, l.token.RunID, m.ID)
		cancel()
		switch {
		case l.keepCtx.Err() != nil || errors.Is(err, data.ErrNotHeld):
			return true // the lease ended anyway; its cause stands
		case err != nil:
			t := time.NewTimer(delay)
			select {
			case <-l.keepCtx.Done():
				t.Stop()
				return true
			case <-t.C:
			}
			continue
		case out == data.AckExpired || out == data.AckNotDelivered:
			return false
		}
		l.mu.Lock()
		if l.finalLocked() || l.ctx.Err() != nil {
			l.mu.Unlock()
			return true
		}
		l.cancel(&CancelledError{Key: l.token.Key, RunID: l.RunID(), Fence: l.token.Fence, Message: m})
		signal(l.changed)
		l.mu.Unlock()
		return true
	}
}

// ErrCancelled: a cancel message (CancelMessage) stopped the run: its
// Context ended with a *CancelledError, which names the sender. The lease
// is still this run's until Release (Do releases when its function
// returned); a fenced write is refused (ErrStale). It is not a loss:
// nobody took the lease.
var ErrCancelled = errors.New("cancelled")

// CancelledError is the cause of a Context ended by a cancel message.
type CancelledError struct {
	Key   Key
	RunID uuid.UUID // the cancelled run's public id
	Fence int64
	// Message is the cancel: Sender and Login name who sent it, Body why
	// (untrusted text).
	Message Message
}

// Error describes the cancel; texts from the database are quoted.
func (e *CancelledError) Error() string { return e.Describe(strconv.Quote) }

// Describe words the cancel in one line, every text that came from the
// database (the key, the sender's label and login, the reason) passed
// through quote, as LostError.Describe does.
func (e *CancelledError) Describe(quote func(string) string) string {
	s := fmt.Sprintf("lease %s fence %d cancelled by %s (login %s, message %d)", quote(e.Key.String()), e.Fence,
		quote(e.Message.Sender), quote(e.Message.Login), e.Message.ID)
	if e.Message.Body != "" {
		s += ": " + quote(e.Message.Body)
	}
	return s
}

// Unwrap makes errors.Is(err, ErrCancelled) true.
func (e *CancelledError) Unwrap() error { return ErrCancelled }

// ackCallsFor is how many acknowledgement calls a Client on store makes at
// once: half the pool's connections, at least one.
func ackCallsFor(store *data.Store) int {
	return max(1, int(store.Pool().Config().MaxConns)/2)
}
