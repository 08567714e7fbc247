package device

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/lease"
)

// steers are what a device's user types to steer the run that holds the
// conversation ("also check …"), one drawn per steer.
var steers = []string{
	"also check the March invoices",
	"also check the refunds from last week",
	"also check the contract's renewal date",
	"and summarise it in three lines",
}

// cancelsInThree: a browser's steer is a cancel ("stop") this many times
// in three: it stops the run that holds the conversation.
const cancelsInThree = 2

// messageTTL is how long a device's message waits to be acknowledged
// before it expires: a few TTLs, so that one sent to a conversation nobody
// takes again expires within the demo.
func messageTTL(ttl time.Duration) time.Duration { return 3 * ttl }

// steer is the steer strategy: the conversation is busy, so the user
// talks to the run that holds it instead of starting one: it sends a steer
// (a browser sometimes a cancel) to the conversation (lease.Client.Send),
// and follows where the message lands (delivered to a run, carried to the
// next one, acknowledged, expired) until it is acknowledged, expires, or
// the user's patience runs out.
func (d *deviceProcess) steer(ctx context.Context, permit lease.Permit, held *lease.HeldError, rng *rand.Rand) {
	key := permit.Request().Key
	m := lease.Message{Kind: lease.SteerMessage, Body: steers[rng.IntN(len(steers))], TTL: messageTTL(d.cfg.TTL)}
	if d.cfg.Name == "browser" && rng.IntN(3) < cancelsInThree {
		m = lease.Message{Kind: lease.CancelMessage, Body: "stop: not what I asked", TTL: m.TTL}
	}
	sent, err := d.client.Send(ctx, permit, m)
	if err != nil {
		if ctx.Err() == nil {
			d.fail(key.Session, fmt.Errorf("send a %s: %w", m.Kind, err))
		}
		return
	}
	d.out.report(Report{Kind: ReportSent, Session: key.Session, Message: m.Kind, MessageID: sent.ID,
		Holder: held.Holder, OwnerRun: held.RunID, Fence: held.Fence})
	wctx, cancel := context.WithTimeout(ctx, d.timing.patience)
	defer cancel()
	last := sent.MessageStatus
	d.landed(key.Session, held.RunID, last)
	for _, until := range []lease.MessageState{lease.MessageDelivered, lease.MessageAcked} {
		if last.State.Reached(until) {
			continue
		}
		st, err := d.client.WaitMessage(wctx, key, sent.IdempotencyKey, until)
		if st.ID != 0 && (st.State != last.State || st.RunID != last.RunID || st.Fence != last.Fence) {
			last = st
			d.landed(key.Session, held.RunID, st)
		}
		if err != nil {
			if !errors.Is(err, lease.ErrMessageExpired) && ctx.Err() == nil && wctx.Err() == nil {
				d.fail(key.Session, err)
			}
			return
		}
	}
}

// landed reports where a message it sent is: sentTo is the run that held
// the conversation when it was sent.
func (d *deviceProcess) landed(session string, sentTo uuid.UUID, st lease.MessageStatus) {
	if st.State == lease.MessageWaiting {
		return
	}
	d.out.report(Report{Kind: ReportLanded, Session: session, MessageID: st.ID, How: string(st.State), Run: st.RunID, Fence: st.Fence,
		Carried: st.RunID != uuid.Nil && st.RunID != sentTo})
}

// takeMessages receives the steers of the run's conversation that arrived
// during a chunk of work, without blocking, and reports each. They are
// acknowledged at the end of the chunk (ackMessages): the steer goes into
// the run's next turn. msgs becomes nil when the lease's channel closes.
func (d *deviceProcess) takeMessages(l *lease.Lease, msgs *<-chan lease.Message, got []lease.Message) []lease.Message {
	for {
		select {
		case m, ok := <-*msgs:
			if !ok {
				*msgs = nil
				return got
			}
			tok := l.Token()
			d.out.report(Report{Kind: ReportReceived, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence,
				Message: m.Kind, MessageID: m.ID, Holder: m.Sender, OwnerRun: m.CarriedFrom})
			got = append(got, m)
		default:
			return got
		}
	}
}

// ackMessages acknowledges the messages the run took, under its fence, and
// reports each acknowledged; one it cannot (the lease was lost meanwhile)
// goes to the next run that holds the conversation.
func (d *deviceProcess) ackMessages(ctx context.Context, l *lease.Lease, got []lease.Message) {
	tok := l.Token()
	for _, m := range got {
		actx, cancel := context.WithTimeout(ctx, d.cfg.TTL/2)
		err := m.Ack(actx)
		cancel()
		if err != nil {
			return // lost, or the demo is stopping: the rest wait for the next run
		}
		d.out.report(Report{Kind: ReportAcked, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence,
			Message: m.Kind, MessageID: m.ID, Holder: m.Sender})
	}
}

// cancelled reports the cancel that stopped the run, if one did: the
// library acknowledged it before it ended the lease's Context.
func (d *deviceProcess) cancelled(l *lease.Lease) *lease.CancelledError {
	var c *lease.CancelledError
	if !errors.As(l.Err(), &c) {
		return nil
	}
	tok := l.Token()
	d.out.report(Report{Kind: ReportAcked, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence,
		Message: lease.CancelMessage, MessageID: c.Message.ID, Holder: c.Message.Sender})
	return c
}
