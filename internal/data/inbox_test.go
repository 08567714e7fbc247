package data_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// send sends a steer or fails the test.
func send(t *testing.T, s *data.Store, k data.Key, body, key string) data.MessageStatus {
	t.Helper()
	st, err := s.SendMessage(context.Background(), k, data.MessageSteer, body, "phone", key, time.Minute)
	if err != nil {
		t.Fatalf("SendMessage(%q) err = %v, want nil", body, err)
	}
	return st
}

// receive receives or fails the test.
func receive(t *testing.T, s *data.Store, k data.Key, run uuid.UUID, after int64) []data.Message {
	t.Helper()
	ms, err := s.ReceiveMessages(context.Background(), k, run, after, data.MaxReceive)
	if err != nil {
		t.Fatalf("ReceiveMessages(after %d) err = %v, want nil", after, err)
	}
	return ms
}

// bodies returns the bodies of ms.
func bodies(ms []data.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}

// messageEvents returns the inbox's events, oldest first.
func messageEvents(t *testing.T, s *data.Store) []data.Event {
	t.Helper()
	var out []data.Event
	for _, e := range events(t, s) {
		if e.Kind.Message() {
			out = append(out, e)
		}
	}
	return out
}

// TestInboxDeliversInOrderOncePerRun: a message sent to a conversation
// reaches the run that holds it, in order; receiving again with the same
// cursor returns the same messages and writes nothing (a lost reply loses
// nothing); an acknowledgement is recorded once, under the run's fence; and
// the sender sees where each message is.
func TestInboxDeliversInOrderOncePerRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		k := data.Key{Account: "acme", Session: "chat-1"}
		run := uuid.New()
		g := mustAcquire(t, s, k, run, time.Minute)
		a := send(t, s, k, "also check the March invoices", "k1")
		b := send(t, s, k, "and April", "k2")
		if !a.Created || a.State != data.MessageWaiting || a.RunID != uuid.Nil || b.ID <= a.ID {
			t.Fatalf("sent %+v then %+v, want two new waiting messages in order", a, b)
		}
		got := receive(t, s, k, run, 0)
		if want := []string{"also check the March invoices", "and April"}; !slices.Equal(bodies(got), want) {
			t.Fatalf("received %q, want %q", bodies(got), want)
		}
		if got[0].Sender != "phone" || got[0].Kind != data.MessageSteer || got[0].CarriedFrom != uuid.Nil {
			t.Errorf("received %+v, want a first delivery of phone's steer", got[0])
		}
		before := len(events(t, s))
		if again := receive(t, s, k, run, 0); !slices.Equal(bodies(again), bodies(got)) {
			t.Errorf("received again %q, want the same %q", bodies(again), bodies(got))
		}
		if after := receive(t, s, k, run, got[0].ID); !slices.Equal(bodies(after), []string{"and April"}) {
			t.Errorf("received after id %d: %q, want only the second", got[0].ID, bodies(after))
		}
		if n := len(events(t, s)); n != before {
			t.Errorf("receiving again wrote %d events, want none", n-before)
		}
		st, ok, err := s.MessageStateOf(ctx, k, "k1")
		if err != nil || !ok || st.State != data.MessageDelivered || st.RunID != data.PublicRunID(run) || st.Fence != g.Fence {
			t.Errorf("MessageStateOf(k1) = %+v, %v, %v, want delivered to run %s fence %d", st, ok, err, data.PublicRunID(run), g.Fence)
		}
		for i, want := range []data.AckOutcome{data.AckDone, data.AckBefore} {
			if out, err := s.AckMessage(ctx, k, run, a.ID); err != nil || out != want {
				t.Errorf("ack #%d = %q, %v, want %q", i+1, out, err, want)
			}
		}
		st, _, _ = s.MessageStateOf(ctx, k, "k1")
		if st.State != data.MessageAcked || st.Fence != g.Fence || st.AckedAt.IsZero() {
			t.Errorf("MessageStateOf(k1) after the ack = %+v, want acked at fence %d", st, g.Fence)
		}
		if left := receive(t, s, k, run, 0); !slices.Equal(bodies(left), []string{"and April"}) {
			t.Errorf("received after the ack %q, want only the unacknowledged one", bodies(left))
		}
		var got3 []data.Kind
		for _, e := range messageEvents(t, s) {
			got3 = append(got3, e.Kind)
			if e.MessageID == 0 || e.Reason != "steer" || e.Holder != "phone" {
				t.Errorf("event %+v, want its message, kind and sender", e)
			}
		}
		want := []data.Kind{data.KindMessageSent, data.KindMessageSent, data.KindMessageDelivered, data.KindMessageDelivered, data.KindMessageAcked}
		if !slices.Equal(got3, want) {
			t.Errorf("events %v, want %v", got3, want)
		}
	})
}

// TestInboxIdempotencyKey: a resend with the same key and body is the same
// message (nothing written), another body under the key is refused with
// nothing written, and a key is a conversation's: another conversation may
// use it.
func TestInboxIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	first := send(t, s, k, "check March", "key-1")
	n := len(events(t, s))
	again := send(t, s, k, "check March", "key-1")
	if again.ID != first.ID || again.Created {
		t.Errorf("resend = %+v, want message %d, not created", again, first.ID)
	}
	_, err := s.SendMessage(ctx, k, data.MessageSteer, "check April", "phone", "key-1", time.Minute)
	if !errors.Is(err, data.ErrMessageKeyReused) || !errors.Is(err, data.ErrInvalid) {
		t.Errorf("another body under the key: err = %v, want ErrMessageKeyReused (an ErrInvalid)", err)
	}
	_, err = s.SendMessage(ctx, k, data.MessageCancel, "check March", "phone", "key-1", time.Minute)
	if !errors.Is(err, data.ErrMessageKeyReused) {
		t.Errorf("another kind under the key: err = %v, want ErrMessageKeyReused", err)
	}
	if got := len(events(t, s)); got != n {
		t.Errorf("the resend and the refusals wrote %d events, want none", got-n)
	}
	var rows int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.message`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("lease.message holds %d rows (%v), want 1", rows, err)
	}
	other := send(t, s, data.Key{Account: "acme", Session: "chat-2"}, "check May", "key-1")
	if !other.Created {
		t.Errorf("the key in another conversation: %+v, want a new message", other)
	}
}

// TestInboxBounds: a conversation holds at most MessageLimit live messages,
// one login at most MessageShare of them, and one login at most
// MessageLoginLimit in all; each refusal writes nothing, and an
// acknowledgement frees a place.
func TestInboxBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	dsnA, _ := pgtest.Login(t, db, "lease_app")
	dsnB, _ := pgtest.Login(t, db, "lease_app")
	a, b := pgtest.OpenStore(t, dsnA, data.Options{}), pgtest.OpenStore(t, dsnB, data.Options{})
	k := data.Key{Account: "acme", Session: "chat-1"}
	for i := range data.MessageShare {
		send(t, a, k, fmt.Sprintf("a%d", i), fmt.Sprintf("a%d", i))
	}
	_, err := a.SendMessage(ctx, k, data.MessageSteer, "one more", "", "a-more", time.Minute)
	if !errors.Is(err, data.ErrInboxShareFull) || !errors.Is(err, data.ErrInboxFull) {
		t.Fatalf("login a's message %d: err = %v, want ErrInboxShareFull", data.MessageShare+1, err)
	}
	for i := range data.MessageLimit - data.MessageShare {
		send(t, b, k, fmt.Sprintf("b%d", i), fmt.Sprintf("b%d", i))
	}
	_, err = s.SendMessage(ctx, k, data.MessageSteer, "one more", "", "su-more", time.Minute)
	if !errors.Is(err, data.ErrInboxFull) || errors.Is(err, data.ErrInboxShareFull) {
		t.Fatalf("message %d: err = %v, want ErrInboxFull", data.MessageLimit+1, err)
	}
	var rows int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.message`).Scan(&rows); err != nil || rows != data.MessageLimit {
		t.Fatalf("lease.message holds %d rows (%v), want %d: a refusal wrote one", rows, err, data.MessageLimit)
	}
	run := uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	ms := receive(t, s, k, run, 0)
	if len(ms) != data.MessageLimit {
		t.Fatalf("received %d, want %d", len(ms), data.MessageLimit)
	}
	if out, err := s.AckMessage(ctx, k, run, ms[0].ID); err != nil || out != data.AckDone {
		t.Fatalf("ack = %q, %v", out, err)
	}
	send(t, s, k, "now there is room", "su-more")

	// One login across conversations: MessageLoginLimit live messages (a
	// has MessageShare-1 live in k: its first was acknowledged).
	for i := 0; i < data.MessageLoginLimit-(data.MessageShare-1); i++ {
		c := data.Key{Account: "bulk", Session: fmt.Sprintf("c%d", i/data.MessageShare)}
		send(t, a, c, "x", fmt.Sprintf("k%d", i))
	}
	_, err = a.SendMessage(ctx, data.Key{Account: "bulk", Session: "fresh"}, data.MessageSteer, "x", "", "last", time.Minute)
	if !errors.Is(err, data.ErrInboxShareFull) {
		t.Fatalf("login a's live message %d in all: err = %v, want ErrInboxShareFull", data.MessageLoginLimit+1, err)
	}
	send(t, b, data.Key{Account: "bulk", Session: "fresh"}, "x", "b-last") // another login is not bounded by a's
}

// TestInboxCarriesToTheNextRun: a message delivered to a run that ends
// without acknowledging it (here: released; the library's tests end runs
// every other way) goes to the next holder, recorded as carried from that
// run; the first run can neither receive nor acknowledge any more, and the
// acknowledgement is the next run's, under its fence.
func TestInboxCarriesToTheNextRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		k := data.Key{Account: "acme", Session: "chat-1"}
		x, y := uuid.New(), uuid.New()
		mustAcquire(t, s, k, x, time.Minute)
		m := send(t, s, k, "stop after this file", "k")
		if got := receive(t, s, k, x, 0); len(got) != 1 {
			t.Fatalf("x received %d, want 1", len(got))
		}
		if _, err := s.Release(ctx, k, x); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReceiveMessages(ctx, k, x, 0, 1); !errors.Is(err, data.ErrNotHeld) {
			t.Errorf("x receives after its release: err = %v, want ErrNotHeld", err)
		}
		if _, err := s.AckMessage(ctx, k, x, m.ID); !errors.Is(err, data.ErrNotHeld) {
			t.Errorf("x acknowledges after its release: err = %v, want ErrNotHeld", err)
		}
		gy := mustAcquire(t, s, k, y, time.Minute)
		got := receive(t, s, k, y, 0)
		if len(got) != 1 || got[0].ID != m.ID || got[0].CarriedFrom != data.PublicRunID(x) {
			t.Fatalf("y received %+v, want message %d carried from x (%s)", got, m.ID, data.PublicRunID(x))
		}
		if out, err := s.AckMessage(ctx, k, y, m.ID); err != nil || out != data.AckDone {
			t.Fatalf("y's ack = %q, %v", out, err)
		}
		evs := messageEvents(t, s)
		carried := evs[len(evs)-2]
		if carried.Kind != data.KindMessageCarried || carried.PrevRunID != data.PublicRunID(x) || carried.RunID != data.PublicRunID(y) ||
			carried.Fence != gy.Fence || carried.MessageID != m.ID {
			t.Errorf("event %+v, want message_carried of %d from x to y at fence %d", carried, m.ID, gy.Fence)
		}
		st, _, _ := s.MessageStateOf(ctx, k, "k")
		if st.State != data.MessageAcked || st.RunID != data.PublicRunID(y) || st.Fence != gy.Fence {
			t.Errorf("state %+v, want acked by y at fence %d", st, gy.Fence)
		}
	})
}

// TestInboxExpires: a message nobody acknowledged by its expiry is received
// by no run and acknowledged by none, its message_expired event is written
// lazily (by the conversation's next send, or the acknowledgement that finds
// it) and once, and its sender sees it expired.
func TestInboxExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	short, err := s.SendMessage(ctx, k, data.MessageSteer, "soon stale", "phone", "short", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	late, err := s.SendMessage(ctx, k, data.MessageSteer, "also stale", "phone", "late", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got := receive(t, s, k, run, 0); len(got) != 2 {
		t.Fatalf("received %d, want 2", len(got))
	}
	pgtest.WaitServerPast(t, db.Conn(t), late.ExpiresAt)
	if got := receive(t, s, k, run, 0); len(got) != 0 {
		t.Errorf("received %q after the expiry, want nothing", bodies(got))
	}
	if out, err := s.AckMessage(ctx, k, run, late.ID); err != nil || out != data.AckExpired {
		t.Errorf("ack after the expiry = %q, %v, want expired", out, err)
	}
	send(t, s, k, "fresh", "fresh")
	var expired []int64
	for _, e := range messageEvents(t, s) {
		if e.Kind == data.KindMessageExpired {
			expired = append(expired, e.MessageID)
			if e.RunID != data.PublicRunID(run) {
				t.Errorf("message_expired %+v, want the run it was delivered to", e)
			}
		}
	}
	slices.Sort(expired)
	if !slices.Equal(expired, []int64{short.ID, late.ID}) {
		t.Errorf("message_expired of %v, want each once: %v", expired, []int64{short.ID, late.ID})
	}
	for _, key := range []string{"short", "late"} {
		if st, _, _ := s.MessageStateOf(ctx, k, key); st.State != data.MessageExpired {
			t.Errorf("MessageStateOf(%s) = %+v, want expired", key, st)
		}
	}
}

// TestInboxSendsInCommitOrder: sends of one conversation from independent
// connections commit in the order of their ids, so a holder that reads
// after the last id it saw misses none of them.
func TestInboxSendsInCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	const senders, each = 8, data.MessageShare / 8 // one login's share: nothing refused
	var wg sync.WaitGroup
	for i := range senders {
		st := db.Store(t)
		wg.Go(func() {
			for j := range each {
				if _, err := st.SendMessage(ctx, k, data.MessageSteer, fmt.Sprintf("%d/%d", i, j), "", fmt.Sprintf("%d-%d", i, j), time.Minute); err != nil {
					t.Errorf("send: %v", err)
				}
			}
		})
	}
	seen := map[string]int{}
	var after int64
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for _, m := range receive(t, s, k, run, after) {
			if m.ID <= after {
				t.Fatalf("message %d after %d", m.ID, after)
			}
			after = m.ID
			seen[m.Body]++
		}
	}
	for _, m := range receive(t, s, k, run, after) {
		seen[m.Body]++
	}
	if len(seen) != senders*each {
		t.Errorf("read %d distinct messages after each last id, want %d: %v", len(seen), senders*each, seen)
	}
	for b, n := range seen {
		if n != 1 {
			t.Errorf("message %q read %d times, want once", b, n)
		}
	}
}

// TestInboxBadInput: each argument out of its range is one error naming it,
// before anything is sent, and the server refuses the same.
func TestInboxBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	long := string(make([]byte, data.MaxMessageBytes+1))
	for _, tt := range []struct {
		name              string
		kind              data.MessageKind
		body, sender, key string
		ttl               time.Duration
	}{
		{"kind", "stop", "x", "", "k", time.Minute},
		{"empty steer", data.MessageSteer, "", "", "k", time.Minute},
		{"newline", data.MessageSteer, "two\nlines", "", "k", time.Minute},
		{"long body", data.MessageSteer, long, "", "k", time.Minute},
		{"bidi sender", data.MessageSteer, "x", "a\u202eb", "k", time.Minute},
		{"no key", data.MessageSteer, "x", "", "", time.Minute},
		{"ttl", data.MessageSteer, "x", "", "k", 25 * time.Hour},
	} {
		_, err := s.SendMessage(ctx, k, tt.kind, tt.body, tt.sender, tt.key, tt.ttl)
		if !errors.Is(err, data.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tt.name, err)
		}
	}
	conn := db.Conn(t)
	for _, sql := range []string{
		`SELECT lease.send_message('acme', 'chat-1', 'steer', E'a\nb', '', 'k', '1 minute')`,
		`SELECT lease.send_message('acme', 'chat-1', 'nudge', 'x', '', 'k', '1 minute')`,
		`SELECT lease.send_message('acme', 'chat-1', 'steer', 'x', '', '', '1 minute')`,
		`SELECT lease.send_message('acme', 'chat-1', 'steer', 'x', '', 'k', '0 seconds')`,
		`SELECT lease.receive_messages('acme', 'chat-1', gen_random_uuid(), -1)`,
		`SELECT lease.receive_messages('acme', 'chat-1', gen_random_uuid(), 0, 65)`,
	} {
		if _, err := conn.Exec(ctx, sql); err == nil || !errors.Is(data.Translate(err), data.ErrInvalid) {
			t.Errorf("%s: err = %v, want SQLSTATE 22023", sql, err)
		}
	}
	if len(events(t, s)) != 0 {
		t.Errorf("refused calls wrote events")
	}
}

// TestInboxRoles: lease_reader reads every message's metadata but neither
// its body nor its key, and sends nothing; a lease_app login that does not
// hold the conversation receives nothing and acknowledges nothing (and
// writes nothing); lease_admin reads the bodies.
func TestInboxRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	holder := uuid.New()
	mustAcquire(t, s, k, holder, time.Minute)
	m := send(t, s, k, "the secret plan", "k")
	readerDSN, _ := pgtest.Login(t, db, "lease_reader")
	reader := pgtest.OpenStore(t, readerDSN, data.Options{})
	rconn := connect(t, readerDSN)
	var meta string
	if err := rconn.QueryRow(ctx, `SELECT sender || ' ' || kind FROM lease.message WHERE id = $1`, m.ID).Scan(&meta); err != nil || meta != "phone steer" {
		t.Errorf("lease_reader reads the metadata: %q, %v, want it", meta, err)
	}
	for _, col := range []string{"body", "idem_key", "*"} {
		var x any
		err := rconn.QueryRow(ctx, `SELECT `+col+` FROM lease.message`).Scan(&x)
		if !errors.Is(data.Translate(err), data.ErrPermission) {
			t.Errorf("lease_reader reads %s: err = %v, want permission denied", col, err)
		}
	}
	if inboxes, err := reader.Inboxes(ctx); err != nil || inboxes[k].Live != 1 || inboxes[k].Waiting != 1 {
		t.Errorf("lease_reader's Inboxes = %v, %v, want 1 live message waiting", inboxes, err)
	}
	if _, err := reader.SendMessage(ctx, k, data.MessageSteer, "x", "", "r", time.Minute); !errors.Is(err, data.ErrPermission) {
		t.Errorf("lease_reader sends: err = %v, want ErrPermission", err)
	}

	appDSN, _ := pgtest.Login(t, db, "lease_app")
	app := pgtest.OpenStore(t, appDSN, data.Options{})
	before := len(events(t, s))
	stranger := uuid.New()
	if _, err := app.ReceiveMessages(ctx, k, stranger, 0, 64); !errors.Is(err, data.ErrNotHeld) {
		t.Errorf("a run that does not hold it receives: err = %v, want ErrNotHeld", err)
	}
	if _, err := app.ReceiveMessages(ctx, k, data.PublicRunID(holder), 0, 64); !errors.Is(err, data.ErrNotHeld) {
		t.Errorf("receiving with the holder's public id: err = %v, want ErrNotHeld", err)
	}
	if _, err := app.AckMessage(ctx, k, data.PublicRunID(holder), m.ID); !errors.Is(err, data.ErrNotHeld) {
		t.Errorf("acknowledging with the holder's public id: err = %v, want ErrNotHeld", err)
	}
	if n := len(events(t, s)); n != before {
		t.Errorf("the refused calls wrote %d events", n-before)
	}
	if st, _, _ := s.MessageStateOf(ctx, k, "k"); st.State != data.MessageWaiting {
		t.Errorf("state after the refused calls %+v, want waiting", st)
	}
	// The sender's own view of its message needs no body.
	if st, ok, err := app.MessageStateOf(ctx, k, "k"); err != nil || !ok || st.ID != m.ID {
		t.Errorf("lease_app's MessageStateOf = %+v, %v, %v", st, ok, err)
	}
	adminDSN, _ := pgtest.Login(t, db, "lease_admin")
	var body string
	if err := connect(t, adminDSN).QueryRow(ctx, `SELECT body FROM lease.message WHERE id = $1`, m.ID).Scan(&body); err != nil || body != "the secret plan" {
		t.Errorf("lease_admin reads the body: %q, %v", body, err)
	}
}

// TestInboxMaintain: maintain_messages writes the expiries nobody observed
// and deletes the messages that ended more than keep ago; lease_app may not
// call it.
func TestInboxMaintain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	st, err := s.SendMessage(ctx, k, data.MessageSteer, "stale", "", "k", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WaitServerPast(t, db.Conn(t), st.ExpiresAt)
	if n, deleted, err := s.MaintainMessages(ctx, 0, 10); err != nil || n != 1 || deleted != 0 {
		t.Fatalf("MaintainMessages = %d, %d, %v, want 1 expired, none deleted", n, deleted, err)
	}
	if n, deleted, err := s.MaintainMessages(ctx, time.Nanosecond, 10); err != nil || n != 0 || deleted != 1 {
		t.Fatalf("MaintainMessages(keep 1ns) = %d, %d, %v, want 0 expired, 1 deleted", n, deleted, err)
	}
	if _, ok, _ := s.MessageStateOf(ctx, k, "k"); ok {
		t.Errorf("the deleted message is still there")
	}
	appDSN, _ := pgtest.Login(t, db, "lease_app")
	if _, _, err := pgtest.OpenStore(t, appDSN, data.Options{}).MaintainMessages(ctx, 0, 10); !errors.Is(err, data.ErrPermission) {
		t.Errorf("lease_app maintains: err = %v, want ErrPermission", err)
	}
}

// TestMessageEventsHideNoFence: the fence-race check of an acquire reads
// the key's two latest ownership events (its own grant's and the one
// before) for a fence above its own; a message sent between the release of
// a higher fence and the racing grant (with no fence at all) must not take
// the release's place.
func TestMessageEventsHideNoFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	g := mustAcquire(t, s, k, run, time.Minute)
	if _, err := s.Release(ctx, k, run); err != nil {
		t.Fatal(err)
	}
	send(t, s, k, "while nobody holds it", "k")
	// The racing grant's own event, written (by its trigger) before its
	// check: its fence, drawn before the other run's, is lower.
	if _, err := conn.Exec(ctx, `INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at)
		VALUES (clock_timestamp(), 'acquired', $1, $2, gen_random_uuid(), $3, clock_timestamp() + interval '1 minute')`,
		k.Account, k.Session, g.Fence-1); err != nil {
		t.Fatal(err)
	}
	var higher []int64
	rows, err := conn.Query(ctx, `SELECT * FROM lease.higher_fences($1, $2, $3, clock_timestamp() - interval '1 minute', clock_timestamp())`,
		k.Account, k.Session, g.Fence-1)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		higher = append(higher, f)
	}
	if rows.Err() != nil || !slices.Contains(higher, g.Fence) {
		t.Errorf("higher_fences below %d = %v (%v), want the released fence %d", g.Fence, higher, rows.Err(), g.Fence)
	}
}

// TestInboxLateCommitIsNotSkipped: a send whose transaction is still open
// holds the conversation's later sends back, so the id a receiver reads
// "after" is never above a message that commits later: here the first
// send stays open while a second one is made, and a receiver that read
// after the newest id it saw then still gets both, each once.
func TestInboxLateCommitIsNotSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	// A committed send first, so the conversation's lock row exists and
	// the second send cannot wait on the first's insert of it instead.
	send(t, s, k, "zero", "k0")
	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after the commit
	if _, err := tx.Exec(ctx, `SELECT lease.send_message('acme', 'chat-1', 'steer', 'first', '', 'k1', '1 minute')`); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := db.Store(t).SendMessage(ctx, k, data.MessageSteer, "second", "", "k2", time.Minute)
		second <- err
	}()
	conn := db.Conn(t)
	var finished bool
	pgtest.Eventually(t, 30*time.Second, "the second send to commit or to wait for the first", func() bool {
		select {
		case err := <-second:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
			return true
		default:
		}
		var waiting bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%send_message%')`).Scan(&waiting)
		return err == nil && waiting
	})
	var after int64
	seen := map[string]int{}
	for _, m := range receive(t, s, k, run, after) {
		after, seen[m.Body] = m.ID, seen[m.Body]+1
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !finished {
		if err := <-second; err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range receive(t, s, k, run, after) {
		seen[m.Body]++
	}
	if seen["zero"] != 1 || seen["first"] != 1 || seen["second"] != 1 {
		t.Errorf("received %v after the newest id seen (%d), want zero, first and second once each", seen, after)
	}
}
