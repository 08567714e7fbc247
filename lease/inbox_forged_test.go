package lease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestForgedMessageSentCostsABoundedRead: anyone who may connect can
// NOTIFY, so a flood of forged message_sent notifications naming a
// holder's key (handed to its inbox as hints, not read back) costs the
// holder at most one receive per batch the listener delivers, never one per
// notification, hands it nothing, and a real message after them is
// delivered as before.
func TestForgedMessageSentCostsABoundedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	hc := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	l := acquire(t, hc, permit(t, hc, testKey, "desktop"))
	ms := l.Messages()
	pgtest.Eventually(t, 30*time.Second, "the inbox's first read", func() bool { return lease.InboxReads(l) > 0 })
	before := lease.InboxReads(l)
	const n = 2000
	payloads := make([]string, n)
	for i := range payloads {
		b, err := json.Marshal(data.Event{ID: int64(1_000_000 + i), At: time.Now(), Kind: data.KindMessageSent, Key: testKey,
			RunID: uuid.New(), MessageID: int64(1_000_000 + i), Reason: "steer", Holder: fmt.Sprintf("forger %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = string(b)
	}
	pgtest.ConnectNobody(t, db).Notify(t, payloads)
	sc := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	sent, err := sc.Send(ctx, permit(t, sc, testKey, "phone"), lease.Message{Kind: lease.SteerMessage, Body: "the real one"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-ms:
		if m.ID != sent.ID {
			t.Fatalf("handed %+v, want the real message %d only", m, sent.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the real message was not delivered within 30 s")
	}
	reads := lease.InboxReads(l) - before
	t.Logf("%d forged message_sent notifications: %d receives", n, reads)
	if reads > n/10 {
		t.Errorf("%d forged notifications made %d receives, want at most one per batch (well under %d)", n, reads, n/10)
	}
}
