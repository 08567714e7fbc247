package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// send sends a steer to the history's conversation and returns its id.
func (h *history) send(idemKey string) int64 {
	h.t.Helper()
	st, err := h.store.SendMessage(context.Background(), h.key, data.MessageSteer, "also check the March invoices", "phone pid 9", idemKey, time.Minute)
	if err != nil {
		h.t.Fatalf("SendMessage(%s) = %v", idemKey, err)
	}
	return st.ID
}

// receiveAck receives tok's messages and acknowledges each, as a device's
// run does, recording what the holder says it acknowledged.
func (h *history) receiveAck(tok lease.Token, holder string) {
	h.t.Helper()
	ctx := context.Background()
	ms, err := h.store.ReceiveMessages(ctx, h.key, tok.RunID, 0, data.MaxReceive)
	if err != nil || len(ms) == 0 {
		h.t.Fatalf("ReceiveMessages = %d messages, %v; want some", len(ms), err)
	}
	for _, m := range ms {
		if out, err := h.store.AckMessage(ctx, h.key, tok.RunID, m.ID); err != nil || out != data.AckDone {
			h.t.Fatalf("AckMessage(%d) = %v, %v; want acked", m.ID, out, err)
		}
		h.rec.Acked[m.ID] = append(h.rec.Acked[m.ID], audit.AckedMessage{Key: h.key, Run: tok.PublicRunID(), Holder: holder})
	}
}

// inboxHistory is newHistory where the holder at the end receives a steer
// and acknowledges it, and a second steer delivered to it is carried, after
// it released, to the next run, which acknowledges it: the real protocol.
// It returns the first message's id.
func inboxHistory(t *testing.T) (*history, int64) {
	t.Helper()
	h := newHistory(t)
	ctx := context.Background()
	first := h.send("one")
	h.receiveAck(h.second, "desktop pid 4")
	h.send("two")
	if _, err := h.store.ReceiveMessages(ctx, h.key, h.second.RunID, first, data.MaxReceive); err != nil {
		t.Fatalf("ReceiveMessages = %v", err)
	}
	h.release(h.second.RunID)
	next := h.grant("browser pid 5", time.Minute)
	h.receiveAck(next, "browser pid 5")
	h.release(next.RunID)
	h.ended(next, audit.EndReleased)
	return h, first
}

// TestCheckPassesAnInbox: a steer acknowledged by the holder, and one
// carried to the next holder and acknowledged there, keep invariant 10 and
// are counted.
func TestCheckPassesAnInbox(t *testing.T) {
	t.Parallel()
	h, _ := inboxHistory(t)
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in a correct inbox: %v", res.Violations)
	}
	got := [...]int{res.Tally.MessagesSent, res.Tally.MessagesDelivered, res.Tally.MessagesCarried, res.Tally.MessagesAcked, res.Tally.MessagesWaiting}
	if want := [...]int{2, 2, 1, 2, 0}; got != want {
		t.Errorf("messages sent, delivered, carried, acked, waiting = %v, want %v", got, want)
	}
}

// TestCheckFailsABrokenInbox: an acknowledgement by a run the message was
// not delivered to, a second acknowledgement, and a holder saying it
// acknowledged a message another run acknowledged each break invariant 10.
func TestCheckFailsABrokenInbox(t *testing.T) {
	t.Parallel()
	forge := func(h *history, id int64, run uuid.UUID, fence int64) {
		h.exec(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason, message_id)
		        VALUES (clock_timestamp(), 'message_acked', $1, $2, $3, $4, clock_timestamp() + interval '1 minute', 'phone pid 9', 'steer', $5)`,
			h.key.Account, h.key.Session, run, fence, id)
	}
	for _, tc := range []struct {
		name    string
		breakIt func(h *history, id int64)
		want    string
	}{
		{"acknowledged twice", func(h *history, id int64) { forge(h, id, h.second.PublicRunID(), h.second.Fence) }, "acknowledged twice"},
		{"acknowledged by another run", func(h *history, id int64) {
			id2 := h.send("three") // waiting: nobody holds the conversation
			forge(h, id2, h.first.PublicRunID(), h.first.Fence)
		}, "but it was delivered to run"},
		{"two holders say they acknowledged it", func(h *history, id int64) {
			h.rec.Acked[id] = append(h.rec.Acked[id], audit.AckedMessage{Key: h.key, Run: h.first.PublicRunID(), Holder: "browser pid 3"})
		}, "acknowledged by 2 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, id := inboxHistory(t)
			tc.breakIt(h, id)
			failed := h.check().Failed(audit.MessagesOnce)
			if len(failed) == 0 || !strings.Contains(failed[0].String(), tc.want) {
				t.Fatalf("violations of invariant %d = %v, want %q", audit.MessagesOnce, failed, tc.want)
			}
		})
	}
}

// TestCheckPassesBatchAcks: messages acknowledged in batches
// (lease.ack_messages, one commit for many) keep invariant 10, with a
// forged id in a batch acknowledging nothing: three acknowledged by the
// holder in one batch, two left when it released carried to the next run
// and acknowledged there in another.
func TestCheckPassesBatchAcks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHistory(t)
	var ids []int64
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		ids = append(ids, h.send(k))
	}
	batch := func(tok lease.Token, holder string, ids []int64) {
		t.Helper()
		if _, err := h.store.ReceiveMessages(ctx, h.key, tok.RunID, 0, data.MaxReceive); err != nil {
			t.Fatalf("ReceiveMessages = %v", err)
		}
		forged := ids[len(ids)-1] + 100
		out, err := h.store.AckMessages(ctx, h.key, tok.RunID, append(append([]int64{}, ids...), forged))
		if err != nil || out[forged] != data.AckNotDelivered {
			t.Fatalf("AckMessages = %v, %v; want the forged id %d not_delivered", out, err, forged)
		}
		for _, id := range ids {
			if out[id] != data.AckDone {
				t.Fatalf("AckMessages: message %d %q, want acked", id, out[id])
			}
			h.rec.Acked[id] = append(h.rec.Acked[id], audit.AckedMessage{Key: h.key, Run: tok.PublicRunID(), Holder: holder})
		}
	}
	batch(h.second, "desktop pid 4", ids[:3])
	h.release(h.second.RunID)
	next := h.grant("browser pid 5", time.Minute)
	batch(next, "browser pid 5", ids[3:])
	h.release(next.RunID)
	h.ended(next, audit.EndReleased)
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in batch acknowledgements: %v", res.Violations)
	}
	got := [...]int{res.Tally.MessagesSent, res.Tally.MessagesCarried, res.Tally.MessagesAcked, res.Tally.MessagesWaiting}
	if want := [...]int{5, 2, 5, 0}; got != want {
		t.Errorf("messages sent, carried, acked, waiting = %v, want %v", got, want)
	}
}
