package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestPatroniInboxFailover: the inbox across a failover of a real Patroni
// cluster in synchronous mode (the primary's postmaster killed, Patroni
// promotes the synchronous standby). A holder (TTL patientTTL, through
// the multi-host DSN) reads its conversation's steers; half of the
// messages are sent and a quarter acknowledged before the fault, the
// other half sent right before it. Every message whose Send returned is
// delivered and acknowledged once after it — by the holder, or by the next
// run if the holder lost the conversation — with one message_acked event
// each on the new primary, none handed on again after its acknowledgement.
// About a minute: run with LEASETOP_LONG=1 (as .ci/run), or
// LEASETOP_PATRONI=all or inbox.
func TestPatroniInboxFailover(t *testing.T) {
	if v := os.Getenv("LEASETOP_PATRONI"); v != "all" && v != "inbox" && !longRun() {
		t.Skip("about a minute: LEASETOP_LONG=1 (as .ci/run), LEASETOP_PATRONI=all or LEASETOP_PATRONI=inbox runs it")
	}
	ctx := context.Background()
	c := startPatroni(t, patroniCase{mode: pgserver.Synchronous})
	dsn, err := pgserver.CreateMigrated(ctx, c.DSN("postgres"), "inbox")
	if err != nil {
		t.Fatal(err)
	}
	old, err := c.Primary(ctx, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitSync(ctx, old); err != nil {
		t.Fatal(err)
	}
	key := lease.Key{Account: "acme", Session: "chat-1"}
	client := func(holder string) (*lease.Client, lease.Permit) {
		cl, err := lease.New(pgtest.OpenStore(t, dsn, data.Options{}), lease.Config{TTL: patientTTL})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		p, err := cl.Authorize(ctx, lease.AuthorizerFunc(allow), key, holder)
		if err != nil {
			t.Fatal(err)
		}
		return cl, p
	}
	holderC, hp := client("desktop")
	senderC, sp := client("phone")
	l, err := holderC.Try(ctx, hp)
	if err != nil {
		t.Fatal(err)
	}
	ms := l.Messages()

	const n = 20
	sent := map[int64]bool{}
	send := func(i int) {
		st, err := senderC.Send(ctx, sp, lease.Message{Kind: lease.SteerMessage, Body: fmt.Sprintf("step %d", i)})
		if err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
		sent[st.ID] = true
	}
	acked := map[int64]uuid.UUID{} // by the run that acknowledged it
	next := func(d time.Duration) (lease.Message, bool) {
		t.Helper()
		select {
		case m, ok := <-ms:
			return m, ok
		case <-time.After(d):
			t.Fatalf("%d of %d messages acknowledged; no more within %s", len(acked), n, d)
		}
		return lease.Message{}, false
	}
	for i := range n / 2 {
		send(i)
	}
	for len(acked) < n/4 {
		m, ok := next(time.Minute)
		if !ok {
			t.Fatalf("the lease ended before the failover: %v", l.Err())
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatalf("Ack before the failover: %v", err)
		}
		acked[m.ID] = l.RunID()
	}
	for i := n / 2; i < n; i++ {
		send(i)
	}
	if _, err := old.KillPostmaster(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Primary(ctx, 2*time.Minute, old); err != nil {
		t.Fatal(err)
	}
	runs := 1
	for len(acked) < n {
		m, ok := next(3 * time.Minute)
		if !ok { // the holder lost the conversation: the next run gets the rest
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			l, err = holderC.Wait(wctx, hp)
			cancel()
			if err != nil {
				t.Fatalf("the next run: %v", err)
			}
			ms, runs = l.Messages(), runs+1
			continue
		}
		if by, dup := acked[m.ID]; dup {
			t.Errorf("message %d handed on to run %s after run %s acknowledged it", m.ID, l.RunID(), by)
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := m.Ack(actx)
		cancel()
		switch {
		case errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRejected):
			continue // the next run gets it
		case err != nil:
			t.Fatalf("Ack of %d after the failover: %v", m.ID, err)
		}
		acked[m.ID] = l.RunID()
	}
	for id := range sent {
		if _, ok := acked[id]; !ok {
			t.Errorf("message %d sent and never acknowledged", id)
		}
	}
	// The new primary's history: one message_acked per message, by the run
	// that was told its Ack succeeded.
	rows, err := pgtest.OpenStore(t, dsn, data.Options{}).Pool().Query(ctx,
		`SELECT message_id, count(*), min(run_id::text) FROM lease.event WHERE kind = 'message_acked' GROUP BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	events := 0
	for rows.Next() {
		var (
			id, count int64
			run       string
		)
		if err := rows.Scan(&id, &count, &run); err != nil {
			t.Fatal(err)
		}
		events++
		if count != 1 || run != acked[id].String() {
			t.Errorf("message %d: %d message_acked events, by %s; want 1, by %s", id, count, run, acked[id])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if events != n {
		t.Errorf("%d messages with a message_acked event on the new primary, want %d", events, n)
	}
	report(t, "patroni-inbox", "messages", n, "runs", runs)
}
