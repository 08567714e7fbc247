package lease_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// inboxLog records what each run was handed on Lease.Messages: message
// ids by run (public id), in the order handed.
type inboxLog struct {
	mu  sync.Mutex
	got map[uuid.UUID][]int64
	at  map[int64]time.Time // when each message was first handed on
}

func newInboxLog() *inboxLog {
	return &inboxLog{got: map[uuid.UUID][]int64{}, at: map[int64]time.Time{}}
}

func (g *inboxLog) add(run uuid.UUID, id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got[run] = append(g.got[run], id)
	if _, ok := g.at[id]; !ok {
		g.at[id] = time.Now()
	}
}

// runs returns a copy of what each run was handed.
func (g *inboxLog) runs() map[uuid.UUID][]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[uuid.UUID][]int64, len(g.got))
	for run, ids := range g.got {
		out[run] = slices.Clone(ids)
	}
	return out
}

// readInbox reads l's messages until the channel closes, logging each and
// acknowledging it; with lag, a message is acknowledged only once the next
// one arrives, so that when the run ends its last message is delivered and
// not acknowledged. It returns a function that waits for the reader.
func readInbox(t *testing.T, l *lease.Lease, log *inboxLog, lag bool) func() {
	t.Helper()
	ms := l.Messages()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var pending *lease.Message
		for m := range ms {
			log.add(l.RunID(), m.ID)
			if lag && pending == nil {
				pending = &m
				continue
			}
			if lag {
				m, *pending = *pending, m
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			// The run ended (the ack then says so) or acknowledged it.
			if err := m.Ack(ctx); err != nil && !errors.Is(err, lease.ErrLost) && !errors.Is(err, lease.ErrRejected) {
				t.Errorf("ack of message %d: %v", m.ID, err)
			}
			cancel()
		}
	}()
	return func() { <-done }
}

// sendBurst sends n steers to key from its own client, one after another,
// keys m0..m(n-1), calling mid after the first half; it returns the
// messages' ids in order. A send refused because the inbox (or the
// sender's share of it) is full is sent again, with its key, once the
// runs acknowledged some: a slow holder on a loaded machine may fall
// behind by more than a login's share.
func sendBurst(t *testing.T, s *data.Store, key lease.Key, n int, mid func()) []int64 {
	t.Helper()
	c := newClient(t, s, lease.Config{TTL: 3 * time.Second})
	p := permit(t, c, key, "phone")
	var ids []int64
	for i := range n {
		if i == n/2 && mid != nil {
			mid()
		}
		var sent lease.Sent
		pgtest.Eventually(t, 60*time.Second, fmt.Sprintf("send %d to find room in the inbox", i), func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var err error
			sent, err = c.Send(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: fmt.Sprintf("steer %d", i), IdempotencyKey: fmt.Sprintf("m%d", i)})
			if err != nil && !errors.Is(err, lease.ErrInboxFull) { // full: the runs acknowledge, and the same key is sent again
				t.Fatalf("send %d: %v", i, err)
			}
			return err == nil
		})
		ids = append(ids, sent.ID)
	}
	return ids
}

// allAcked waits until every message of key is acknowledged.
func allAcked(t *testing.T, db pgtest.DB, key lease.Key, n int) {
	t.Helper()
	conn := db.Conn(t)
	pgtest.Eventually(t, 60*time.Second, fmt.Sprintf("the %d messages to be acknowledged", n), func() bool {
		var acked int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM lease.message
			WHERE account_id = $1 AND session_id = $2 AND acked_at IS NOT NULL`, key.Account, key.Session).Scan(&acked)
		return err == nil && acked == n
	})
}

// inboxHolds checks key's inbox after a burst of the messages ids, given
// what each run was handed (runs, by public id): every message acknowledged
// exactly once; no run handed a message twice; and each message's
// deliveries chain from run to run: the first is message_delivered, each
// next one a message_carried from the run before, and the acknowledgement
// is the last delivery's run, at its fence. It returns how many messages
// were carried.
func inboxHolds(t *testing.T, s *data.Store, key lease.Key, ids []int64, runs map[uuid.UUID][]int64) (carried int) {
	t.Helper()
	for run, got := range runs {
		seen := map[int64]bool{}
		for _, id := range got {
			if seen[id] {
				t.Errorf("run %s was handed message %d twice", run, id)
			}
			seen[id] = true
		}
	}
	evs, err := s.EventsBetween(context.Background(), data.HistoryFilter{Keys: []data.Key{key}})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(evs, func(a, b data.Event) int { return int(a.ID - b.ID) })
	type delivery struct {
		run   uuid.UUID
		fence int64
	}
	last := map[int64]*delivery{}
	acks := map[int64]int{}
	for _, e := range evs {
		switch e.Kind {
		case data.KindMessageDelivered:
			if last[e.MessageID] != nil {
				t.Errorf("message %d delivered (first) again to run %s", e.MessageID, e.RunID)
			}
			last[e.MessageID] = &delivery{e.RunID, e.Fence}
		case data.KindMessageCarried:
			d := last[e.MessageID]
			if d == nil || d.run != e.PrevRunID || d.fence != e.PrevFence {
				t.Errorf("message %d carried from run %s fence %d, but its last delivery was %+v", e.MessageID, e.PrevRunID, e.PrevFence, d)
			}
			last[e.MessageID] = &delivery{e.RunID, e.Fence}
			carried++
		case data.KindMessageAcked:
			acks[e.MessageID]++
			if d := last[e.MessageID]; d == nil || d.run != e.RunID || d.fence != e.Fence {
				t.Errorf("message %d acknowledged by run %s fence %d, but delivered last to %+v", e.MessageID, e.RunID, e.Fence, d)
			}
		}
	}
	for _, id := range ids {
		if acks[id] != 1 {
			t.Errorf("message %d acknowledged %d times, want once", id, acks[id])
		}
	}
	return carried
}

// TestMessagesReachTheHolder: steers sent from another client reach the
// run holding the conversation on Lease.Messages, in order, each once,
// within milliseconds (the message_sent notification, not a poll: the
// holder renews every 10 s), and the sender sees each acknowledged by that
// run at its fence.
func TestMessagesReachTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	ms := l.Messages()
	senderC := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	p := permit(t, senderC, testKey, "phone")
	for i, body := range []string{"also check the March invoices", "and April"} {
		sent, err := senderC.Send(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: body})
		if err != nil || !sent.Created || sent.IdempotencyKey == "" {
			t.Fatalf("Send = %+v, %v", sent, err)
		}
		var m lease.Message
		select {
		case m = <-ms:
		case <-time.After(5 * time.Second): // the holder renews every 10 s: only the notification can be this fast
			t.Fatalf("message %d not delivered within 5 s", i)
		}
		if m.Body != body || m.Sender != "phone" || m.ID != sent.ID || m.Key != testKey {
			t.Fatalf("delivered %+v, want %q from phone, id %d", m, body, sent.ID)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			t.Errorf("a second Ack: %v, want nil", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := senderC.WaitMessage(wctx, testKey, sent.IdempotencyKey, lease.MessageAcked)
		cancel()
		if err != nil || st.RunID != l.RunID() || st.Fence != l.Fence() {
			t.Errorf("WaitMessage = %+v, %v, want acked by run %s at fence %d", st, err, l.RunID(), l.Fence())
		}
	}
	select {
	case m := <-ms:
		t.Errorf("a third message %+v, want none", m)
	default:
	}
}

// TestSendWaitDelivered: SendWait returns where the message landed once
// it got there: delivered to the holder's run, or acknowledged; a message
// nobody receives in time ends with ErrMessageExpired.
func TestSendWaitDelivered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	senderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second, PollInterval: 100 * time.Millisecond})
	p := permit(t, senderC, testKey, "phone")
	_, err := senderC.SendWait(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: "nobody reads this", TTL: 300 * time.Millisecond}, lease.MessageDelivered)
	if !errors.Is(err, lease.ErrMessageExpired) {
		t.Fatalf("SendWait to nobody: err = %v, want ErrMessageExpired", err)
	}
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	l.Messages()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sent, err := senderC.SendWait(wctx, p, lease.Message{Kind: lease.SteerMessage, Body: "read this"}, lease.MessageDelivered)
	if err != nil || sent.State != lease.MessageDelivered || sent.RunID != l.RunID() || sent.Fence != l.Fence() {
		t.Fatalf("SendWait delivered = %+v, %v, want delivered to run %s fence %d", sent, err, l.RunID(), l.Fence())
	}
}

// TestCancelMessageStopsTheRun: a cancel stops the work: Do's function
// sees its context end with a *CancelledError naming the sender, Do
// releases the lease and returns it (not a loss); the cancel is
// acknowledged by that run, and a steer sent after it is left for the next
// run, which is not cancelled.
func TestCancelMessageStopsTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	holderC := newClient(t, s, lease.Config{TTL: 30 * time.Second})
	senderC := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	p := permit(t, senderC, testKey, "browser")
	started := make(chan *lease.Lease, 1)
	done := make(chan error, 1)
	var fenced error
	go func() {
		done <- holderC.Do(ctx, permit(t, holderC, testKey, "desktop"), lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
			l.Messages()
			started <- l
			<-ctx.Done()
			fenced = l.FencedTx(context.Background(), s.Pool(), func(context.Context, pgx.Tx) error { return nil })
			return ctx.Err()
		})
	}()
	l := <-started
	sent, err := senderC.Send(ctx, p, lease.Message{Kind: lease.CancelMessage, Body: "user pressed stop"})
	if err != nil {
		t.Fatal(err)
	}
	var cancelled *lease.CancelledError
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not return within 10 s of the cancel")
	}
	if !errors.As(err, &cancelled) || !errors.Is(err, lease.ErrCancelled) || errors.Is(err, lease.ErrLost) {
		t.Fatalf("Do err = %v, want a *CancelledError and no loss", err)
	}
	if cancelled.Message.Sender != "browser" || cancelled.Message.Body != "user pressed stop" || cancelled.RunID != l.RunID() {
		t.Errorf("CancelledError = %+v, want browser's cancel of run %s", cancelled, l.RunID())
	}
	if !errors.Is(fenced, lease.ErrStale) || !errors.Is(fenced, lease.ErrCancelled) {
		t.Errorf("FencedTx after the cancel: %v, want ErrStale because of the cancel", fenced)
	}
	if _, _, ok, err := s.Lease(ctx, testKey); err != nil || ok {
		t.Errorf("the lease after Do: held %v (%v), want released", ok, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := senderC.WaitMessage(wctx, testKey, sent.IdempotencyKey, lease.MessageAcked)
	if err != nil || st.RunID != l.RunID() {
		t.Errorf("the cancel's status %+v, %v, want acked by the cancelled run", st, err)
	}

	after, err := senderC.Send(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: "for the next run"})
	if err != nil {
		t.Fatal(err)
	}
	next := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	select {
	case m := <-next.Messages():
		if m.ID != after.ID {
			t.Errorf("the next run got message %d, want the steer %d", m.ID, after.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next run got nothing")
	}
	if err := next.Err(); err != nil {
		t.Errorf("the next run: %v, want held: the cancel was the last run's", err)
	}
}

// TestMessagesAcrossAHandOverAndAPreempt: in the middle of a burst of
// steers the holder hands the conversation over (or is preempted); every
// message is acknowledged exactly once, none is handed twice to one run,
// and what the first run received without acknowledging is carried to the
// next one.
func TestMessagesAcrossAHandOverAndAPreempt(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"hand-over", "preempt"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.New(t)
			s := db.Store(t)
			log := newInboxLog()
			aC := newClient(t, db.Store(t), lease.Config{TTL: 5 * time.Second})
			a := acquire(t, aC, permit(t, aC, testKey, "desktop"))
			aDone := readInbox(t, a, log, true)
			bC := newClient(t, db.Store(t), lease.Config{TTL: 5 * time.Second}) // the database's owner: it may preempt
			pb := permit(t, bC, testKey, "phone")
			var (
				b     *lease.Lease
				bDone func()
			)
			n := 40
			ids := sendBurst(t, s, testKey, n, func() {
				pgtest.Eventually(t, 30*time.Second, "a to have received messages", func() bool { return len(log.runs()[a.RunID()]) > 0 })
				var err error
				if how == "preempt" {
					b, err = bC.Preempt(ctx, pb, "a burst")
				} else {
					asked := a.Asked()
					got := askAsync(ctx, bC, pb, 30*time.Second, lease.BusyRefuse)
					<-asked
					if err := a.HandOver(ctx); err != nil {
						t.Fatalf("HandOver: %v", err)
					}
					r := <-got
					b, err = r.l, r.err
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				t.Cleanup(func() { _ = b.Release(context.Background()) })
				bDone = readInbox(t, b, log, false) // during the burst's second half: the inbox drains
			})
			allAcked(t, db, testKey, n)
			aDone()
			_ = b.Release(ctx)
			bDone()
			if carried := inboxHolds(t, s, testKey, ids, log.runs()); carried == 0 {
				t.Errorf("no message carried from run %s to %s: the test did not end a run with one unacknowledged", a.RunID(), b.RunID())
			}
		})
	}
}

// TestCancelledLeaseIsKeptUntilReleased: a cancel ends the lease's
// Context but not the lease: it is renewed past its TTL until the run
// releases it (a run may take a while to stop), and nobody else can take
// it meanwhile.
func TestCancelledLeaseIsKeptUntilReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	hc := newClient(t, s, lease.Config{TTL: time.Second})
	l := acquire(t, hc, permit(t, hc, testKey, "desktop"))
	l.Messages()
	sc := newClient(t, db.Store(t), lease.Config{TTL: time.Second})
	if _, err := sc.Send(ctx, permit(t, sc, testKey, "browser"), lease.Message{Kind: lease.CancelMessage}); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, l, 10*time.Second); !errors.Is(err, lease.ErrCancelled) {
		t.Fatalf("the lease's context ended with %v, want ErrCancelled", err)
	}
	first := holderOf(t, s, testKey)
	pgtest.WaitServerPast(t, db.Conn(t), first.ExpiresAt.Add(time.Second)) // two TTLs after the cancel's last renewal
	if st := l.State(); st.Status != lease.Held {
		t.Fatalf("the cancelled lease is %v, want still held until Release", st)
	}
	if row := holderOf(t, s, testKey); row.RunID != l.RunID() || !row.ExpiresAt.After(first.ExpiresAt) {
		t.Fatalf("the row %+v, want the cancelled run's, renewed past %v", row, first.ExpiresAt)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, held, _ := s.Lease(ctx, testKey); held {
		t.Error("the lease is still there after Release")
	}
}
