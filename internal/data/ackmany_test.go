package data_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// sendReceive sends n steers to k and has run receive them, returning
// their ids in order.
func sendReceive(t *testing.T, s *data.Store, k data.Key, run uuid.UUID, n int, prefix string) []int64 {
	t.Helper()
	for i := range n {
		send(t, s, k, prefix+" "+string(rune('a'+i)), prefix+string(rune('a'+i)))
	}
	var ids []int64
	for _, m := range receive(t, s, k, run, 0) {
		ids = append(ids, m.ID)
	}
	if len(ids) < n {
		t.Fatalf("received %d messages, want at least %d", len(ids), n)
	}
	return ids
}

// ackedEvents returns how many message_acked events there are and how
// many transactions wrote them (the rows' xmin).
func ackedEvents(t *testing.T, conn *pgx.Conn) (events, transactions int) {
	t.Helper()
	err := conn.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT xmin::text) FROM lease.event WHERE kind = 'message_acked'`).Scan(&events, &transactions)
	if err != nil {
		t.Fatal(err)
	}
	return events, transactions
}

// TestAckMessagesIsOneCommit: acknowledging ten messages with AckMessages
// is one transaction (every message_acked event has the same xmin), with
// one notification per message after the commit; an id of no message of
// this run (forged beyond what was delivered, or another conversation's)
// is not_delivered, and acknowledging again writes nothing.
func TestAckMessagesIsOneCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	owner := db.Conn(t)
	listener := db.Conn(t)
	if _, err := listener.Exec(ctx, `LISTEN lease_events`); err != nil {
		t.Fatal(err)
	}
	k := data.Key{Account: "acme", Session: "chat-1"}
	other := data.Key{Account: "acme", Session: "chat-2"}
	run, otherRun := uuid.New(), uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	mustAcquire(t, s, other, otherRun, time.Minute)
	ids := sendReceive(t, s, k, run, 10, "k")
	foreign := sendReceive(t, s, other, otherRun, 1, "o")[0]
	forged := ids[len(ids)-1] + 1000
	call := append(append([]int64{}, ids...), ids[0], forged, foreign) // a repeat counts once
	out, err := s.AckMessages(ctx, k, run, call)
	if err != nil {
		t.Fatalf("AckMessages = %v", err)
	}
	for _, id := range ids {
		if out[id] != data.AckDone {
			t.Errorf("message %d: %q, want acked", id, out[id])
		}
	}
	if out[forged] != data.AckNotDelivered || out[foreign] != data.AckNotDelivered || len(out) != len(ids)+2 {
		t.Errorf("outcomes %v, want the forged id %d and the other conversation's %d not_delivered", out, forged, foreign)
	}
	if n, xacts := ackedEvents(t, owner); n != 10 || xacts != 1 {
		t.Errorf("%d message_acked events written by %d transactions, want 10 by 1", n, xacts)
	}
	// One notification per message acknowledged, each its event's.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	notified := map[int64]bool{}
	for len(notified) < len(ids) {
		n, err := listener.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("notifications of message_acked: %d of %d, then %v", len(notified), len(ids), err)
		}
		var ev struct {
			Kind      string `json:"kind"`
			MessageID int64  `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(n.Payload), &ev); err != nil {
			t.Fatalf("payload %q: %v", n.Payload, err)
		}
		if ev.Kind == string(data.KindMessageAcked) {
			if notified[ev.MessageID] {
				t.Errorf("message %d notified twice", ev.MessageID)
			}
			notified[ev.MessageID] = true
		}
	}
	again, err := s.AckMessages(ctx, k, run, ids)
	if err != nil {
		t.Fatalf("AckMessages again = %v", err)
	}
	for _, id := range ids {
		if again[id] != data.AckBefore {
			t.Errorf("message %d again: %q, want acked_before", id, again[id])
		}
	}
	if n, _ := ackedEvents(t, owner); n != 10 {
		t.Errorf("acknowledging again: %d message_acked events, want still 10", n)
	}
	if st, _, _ := s.MessageStateOf(ctx, other, "oa"); st.State != data.MessageDelivered {
		t.Errorf("the other conversation's message after a forged ack: %+v, want delivered, not acked", st)
	}
}

// TestAckMessagesRace: two batches of the same run racing over the same
// messages, from two connections, acknowledge each message once: one of
// them answers acked, the other acked_before, and there is one
// message_acked event per message.
func TestAckMessagesRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	a, b := db.Store(t), db.Store(t)
	owner := db.Conn(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	mustAcquire(t, a, k, run, time.Minute)
	total := 0
	for round := range 5 {
		ids := sendReceive(t, a, k, run, 8, string(rune('a'+round)))
		total += len(ids)
		rev := make([]int64, len(ids))
		for i, id := range ids {
			rev[len(ids)-1-i] = id
		}
		var (
			wg         sync.WaitGroup
			outA, outB map[int64]data.AckOutcome
			errA, errB error
		)
		start := make(chan struct{})
		wg.Go(func() { <-start; outA, errA = a.AckMessages(ctx, k, run, ids) })
		wg.Go(func() { <-start; outB, errB = b.AckMessages(ctx, k, run, rev) })
		close(start)
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("round %d: AckMessages = %v, %v", round, errA, errB)
		}
		for _, id := range ids {
			x, y := outA[id], outB[id]
			if !(x == data.AckDone && y == data.AckBefore) && !(x == data.AckBefore && y == data.AckDone) {
				t.Errorf("round %d, message %d: %q and %q, want one acked and one acked_before", round, id, x, y)
			}
		}
	}
	if n, _ := ackedEvents(t, owner); n != total {
		t.Errorf("%d message_acked events for %d messages, want one each", n, total)
	}
}

// TestAckMessagesLostLeaseMidBatch: a batch waiting for the lease row while
// an operator force-releases the lease acknowledges nothing (ErrNotHeld:
// the fence check sees the lease gone once it gets the row), and the next
// holder receives every message, carried, and acknowledges them.
func TestAckMessagesLostLeaseMidBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	owner := db.Conn(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	ids := sendReceive(t, s, k, run, 6, "m")

	tx, err := owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	var released bool
	if err := tx.QueryRow(ctx, `SELECT lease.force_release($1, $2, $3, 'test')`, k.Account, k.Session, data.PublicRunID(run)).Scan(&released); err != nil || !released {
		t.Fatalf("force_release = %v, %v", released, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.AckMessages(ctx, k, run, ids)
		done <- err
	}()
	watch := db.Conn(t)
	pgtest.Eventually(t, time.Minute, "the batch waits for the lease row", func() bool {
		var waiting bool
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%ack_messages%')`).Scan(&waiting)
		return err == nil && waiting
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("the batch after the lease was lost: %v, want ErrNotHeld", err)
	}
	if n, _ := ackedEvents(t, owner); n != 0 {
		t.Errorf("the lost run's batch wrote %d message_acked events, want none", n)
	}
	next := uuid.New()
	mustAcquire(t, s, k, next, time.Minute)
	got := receive(t, s, k, next, 0)
	if len(got) != len(ids) {
		t.Fatalf("the next holder received %d messages, want %d", len(got), len(ids))
	}
	for _, m := range got {
		if m.CarriedFrom != data.PublicRunID(run) {
			t.Errorf("message %d carried from %s, want the lost run %s", m.ID, m.CarriedFrom, data.PublicRunID(run))
		}
	}
	out, err := s.AckMessages(ctx, k, next, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if out[id] != data.AckDone {
			t.Errorf("the next holder's ack of %d: %q, want acked", id, out[id])
		}
	}
}

// TestAckMessagesAsLeaseApp: lease_app may acknowledge in a batch only as
// the holder: another run's id (or the holder's public one) is refused
// with nothing written, and bad input (no ids, too many, a NULL) is
// refused.
func TestAckMessagesAsLeaseApp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Conn(t)
	appDSN, _ := pgtest.Login(t, db, "lease_app")
	app := pgtest.OpenStore(t, appDSN, data.Options{})
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	mustAcquire(t, app, k, run, time.Minute)
	ids := sendReceive(t, app, k, run, 3, "m")
	for name, who := range map[string]uuid.UUID{"another run": uuid.New(), "the holder's public id": data.PublicRunID(run)} {
		if _, err := app.AckMessages(ctx, k, who, ids); !errors.Is(err, data.ErrNotHeld) {
			t.Errorf("batch ack as %s: %v, want ErrNotHeld", name, err)
		}
	}
	if n, _ := ackedEvents(t, owner); n != 0 {
		t.Errorf("the refused batches wrote %d message_acked events", n)
	}
	conn := connect(t, appDSN)
	for _, sql := range []string{
		`SELECT * FROM lease.ack_messages('acme', 'chat-1', $1, '{}')`,
		`SELECT * FROM lease.ack_messages('acme', 'chat-1', $1, NULL)`,
		`SELECT * FROM lease.ack_messages('acme', 'chat-1', $1, ARRAY[1, NULL]::bigint[])`,
		`SELECT * FROM lease.ack_messages('acme', 'chat-1', $1, (SELECT array_agg(g) FROM generate_series(1, 65) g))`,
	} {
		if _, err := conn.Exec(ctx, sql, run); !errors.Is(data.Translate(err), data.ErrInvalid) {
			t.Errorf("%s: %v, want invalid input", sql, err)
		}
	}
	out, err := app.AckMessages(ctx, k, run, ids)
	if err != nil || len(out) != len(ids) {
		t.Fatalf("lease_app's batch as the holder = %v, %v", out, err)
	}
	if _, err := app.AckMessages(ctx, k, run, make([]int64, data.MaxAckMany+1)); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("AckMessages of %d ids: %v, want ErrInvalid", data.MaxAckMany+1, err)
	}
}
