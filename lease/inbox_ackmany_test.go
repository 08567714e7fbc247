package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// ackBatchRig is a holder whose lease received n steers, with its
// acknowledgement calls held at the first until the test lets them go.
type ackBatchRig struct {
	db    pgtest.DB
	owner *pgx.Conn
	l     *lease.Lease
	ms    []lease.Message

	mu     sync.Mutex
	calls  [][]int64     // the ids of each acknowledgement call, in order
	inside chan struct{} // closed when the first call is held
	letGo  chan struct{} // close to let the first call go
}

func newAckBatchRig(t *testing.T, n int) *ackBatchRig {
	t.Helper()
	ctx := context.Background()
	r := &ackBatchRig{db: pgtest.New(t), inside: make(chan struct{}), letGo: make(chan struct{})}
	r.owner = r.db.Conn(t)
	holderC := newClient(t, r.db.Store(t), lease.Config{TTL: 30 * time.Second})
	r.l = acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	lease.SetAckHook(r.l, func(ids []int64) {
		r.mu.Lock()
		r.calls = append(r.calls, ids)
		first := len(r.calls) == 1
		r.mu.Unlock()
		if first {
			close(r.inside)
			<-r.letGo
		}
	})
	ch := r.l.Messages()
	senderC := newClient(t, r.db.Store(t), lease.Config{TTL: 30 * time.Second})
	p := permit(t, senderC, testKey, "phone")
	for i := range n {
		if _, err := senderC.Send(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: "step " + string(rune('a'+i))}); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	for len(r.ms) < n {
		select {
		case m := <-ch:
			r.ms = append(r.ms, m)
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d messages delivered within a minute", len(r.ms), n)
		}
	}
	return r
}

// ackAll acknowledges the first message, and once its call is held, the
// others, each from a goroutine of its own as a program may; once every
// other Ack waits for the next call, it lets the first call go, and
// returns each Ack's error.
func (r *ackBatchRig) ackAll(t *testing.T, meanwhile func()) []error {
	t.Helper()
	ctx := context.Background()
	errs := make([]error, len(r.ms))
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = r.ms[0].Ack(ctx) })
	<-r.inside
	for i := 1; i < len(r.ms); i++ {
		wg.Go(func() { errs[i] = r.ms[i].Ack(ctx) })
	}
	pgtest.Eventually(t, time.Minute, "the other Acks wait for the next call", func() bool {
		return lease.AcksWaiting(r.l) == len(r.ms)-1
	})
	if meanwhile != nil {
		meanwhile()
	}
	close(r.letGo)
	wg.Wait()
	return errs
}

// acked returns how many message_acked events there are and how many
// transactions wrote them.
func (r *ackBatchRig) acked(t *testing.T) (events, transactions int) {
	t.Helper()
	err := r.owner.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT xmin::text) FROM lease.event WHERE kind = 'message_acked'`).Scan(&events, &transactions)
	if err != nil {
		t.Fatal(err)
	}
	return events, transactions
}

// TestAcksOfOneLeaseAreJoined: the Acks of one lease made while one of its
// acknowledgements is in flight go together in the next call: ten Acks,
// two calls, two commits (the message_acked events' xmin), each Ack nil
// once its message is acknowledged.
func TestAcksOfOneLeaseAreJoined(t *testing.T) {
	t.Parallel()
	r := newAckBatchRig(t, 10)
	for i, err := range r.ackAll(t, nil) {
		if err != nil {
			t.Errorf("Ack of message %d: %v", r.ms[i].ID, err)
		}
	}
	if len(r.calls) != 2 || len(r.calls[0]) != 1 || len(r.calls[1]) != 9 {
		t.Errorf("acknowledgement calls %v, want 2: the first message's, then the 9 others together", r.calls)
	}
	if n, xacts := r.acked(t); n != 10 || xacts != 2 {
		t.Errorf("%d message_acked events in %d transactions, want 10 in 2", n, xacts)
	}
}

// TestAcksOfALeaseLostMidBatch: an operator force-releases the lease while
// its first acknowledgement call is held and nine more Acks wait: every Ack
// fails with the lease's loss (nothing acknowledged), and the next holder
// receives all ten, carried from the lost run, and acknowledges them.
func TestAcksOfALeaseLostMidBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newAckBatchRig(t, 10)
	lost := r.l.RunID()
	errs := r.ackAll(t, func() {
		if ok, err := r.db.Store(t).ForceRelease(ctx, testKey, lost, "test"); err != nil || !ok {
			t.Fatalf("ForceRelease = %v, %v", ok, err)
		}
	})
	for i, err := range errs {
		if !errors.Is(err, lease.ErrLost) && !errors.Is(err, lease.ErrRejected) {
			t.Errorf("Ack of message %d after the lease was lost: %v, want its loss", r.ms[i].ID, err)
		}
	}
	if n, _ := r.acked(t); n != 0 {
		t.Errorf("%d message_acked events after the lease was lost, want none", n)
	}
	nextC := newClient(t, r.db.Store(t), lease.Config{TTL: 30 * time.Second})
	next := acquire(t, nextC, permit(t, nextC, testKey, "browser"))
	ch := next.Messages()
	for range r.ms {
		var m lease.Message
		select {
		case m = <-ch:
		case <-time.After(time.Minute):
			t.Fatal("the next holder got fewer messages than were sent within a minute")
		}
		if m.CarriedFrom != lost {
			t.Errorf("message %d carried from %s, want the lost run %s", m.ID, m.CarriedFrom, lost)
		}
		if err := m.Ack(ctx); err != nil {
			t.Errorf("the next holder's Ack of %d: %v", m.ID, err)
		}
	}
	if n, _ := r.acked(t); n != len(r.ms) {
		t.Errorf("%d message_acked events, want %d: each once, by the next holder", n, len(r.ms))
	}
	var byLost int
	if err := r.owner.QueryRow(ctx, `SELECT count(*) FROM lease.message WHERE acked_run = $1`, lost).Scan(&byLost); err != nil || byLost != 0 {
		t.Errorf("%d messages acknowledged by the lost run (%v), want none", byLost, err)
	}
}

// TestAckAfterALostDelivery: a receive commits without waiting for its WAL
// flush, so a crash or a failover can take back a delivery after the
// message was handed on. Its Ack then finds it delivered to nobody: the
// lease records the delivery again (message_delivered, to this run) and
// acknowledges it, instead of answering ErrNotDelivered for a message it
// handed on.
func TestAckAfterALostDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newAckBatchRig(t, 2)
	close(r.letGo)
	m := r.ms[0]
	// What a lost commit leaves: the message and its history as they were
	// before the receive.
	for _, sql := range []string{
		`UPDATE lease.message SET delivered_run = NULL, delivered_fence = NULL, delivered_at = NULL WHERE id = $1`,
		`DELETE FROM lease.event WHERE kind = 'message_delivered' AND message_id = $1`,
	} {
		if _, err := r.owner.Exec(ctx, sql, m.ID); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatalf("Ack of a message whose delivery was lost: %v, want nil", err)
	}
	var run string
	var delivered int
	if err := r.owner.QueryRow(ctx, `SELECT acked_run::text, (SELECT count(*) FROM lease.event WHERE kind = 'message_delivered' AND message_id = $1)
		FROM lease.message WHERE id = $1`, m.ID).Scan(&run, &delivered); err != nil {
		t.Fatal(err)
	}
	if run != r.l.RunID().String() || delivered != 1 {
		t.Errorf("acknowledged by %s with %d message_delivered events, want by %s with 1", run, delivered, r.l.RunID())
	}
	if err := r.ms[1].Ack(ctx); err != nil {
		t.Errorf("Ack of the other message: %v", err)
	}
}

// TestAcksOfAClientLeaveConnectionsToReceives: the acknowledgement calls of
// a Client's leases hold at most lease.AckCallLimit of its connections at
// once (half its pool), each through its WAL flush, so that a holder of
// many busy conversations keeps connections for the receives that deliver
// its next messages. Two more leases than the limit each acknowledge a
// message while the first calls are held: no call starts until one held
// ends, and the waiting Acks then go, each answered. Without the bound
// every lease's call starts at once.
func TestAcksOfAClientLeaveConnectionsToReceives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	senderC := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	limit := lease.AckCallLimit(holderC)
	if limit < 1 {
		t.Fatalf("AckCallLimit = %d, want at least 1", limit)
	}
	n := limit + 2
	var (
		mu        sync.Mutex
		inside    int // calls held in the hook
		entered   int // calls that reached the hook
		released  int // held calls let go
		violation string
		letGo     = make(chan struct{}, n)
	)
	ls := make([]*lease.Lease, n)
	ms := make([]lease.Message, n)
	for i := range n {
		key := lease.Key{Account: "acct", Session: fmt.Sprintf("sess-%d", i)}
		ls[i] = acquire(t, holderC, permit(t, holderC, key, "desktop"))
		lease.SetAckHook(ls[i], func([]int64) {
			mu.Lock()
			entered++
			inside++
			if entered > limit+released && violation == "" {
				violation = fmt.Sprintf("call %d started with %d held and %d let go: more than %d at once", entered, inside-1, released, limit)
			}
			mu.Unlock()
			<-letGo
			mu.Lock()
			inside--
			mu.Unlock()
		})
		ch := ls[i].Messages()
		if _, err := senderC.Send(ctx, permit(t, senderC, key, "phone"), lease.Message{Kind: lease.SteerMessage, Body: "also check March"}); err != nil {
			t.Fatalf("Send: %v", err)
		}
		select {
		case ms[i] = <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("lease %d: no message delivered within a minute", i)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = ms[i].Ack(ctx) })
	}
	waiting := func() int {
		w := 0
		for _, l := range ls {
			w += lease.AcksWaiting(l)
		}
		return w
	}
	pgtest.Eventually(t, time.Minute, "the first calls held and the other Acks waiting for one to end", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return violation != "" || (inside == limit && waiting() == n-limit)
	})
	for range n {
		mu.Lock()
		released++
		mu.Unlock()
		letGo <- struct{}{}
	}
	wg.Wait()
	if violation != "" {
		t.Error(violation)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("Ack of lease %d's message: %v", i, err)
		}
	}
	var acked int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'message_acked'`).Scan(&acked); err != nil || acked != n {
		t.Errorf("%d message_acked events (%v), want %d", acked, err, n)
	}
}
