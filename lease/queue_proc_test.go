package lease_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/lease"
)

// childQueue queues for testKey's lease with lease.Client.Queue, labelled
// $LEASE_TEST_QUEUE_NAME, $LEASE_TEST_QUEUE_ROUNDS times. While it holds
// the lease it queues again for its next round (a fresh run id) and
// releases only once its new ticket is in the queue, so the order of the
// rounds is the order of the first queueing.
const (
	childQueue    = "queue"
	envQueueName  = "LEASE_TEST_QUEUE_NAME"
	envQueueRound = "LEASE_TEST_QUEUE_ROUNDS"
	// envQueueSession, when set, is the session of testKey's account the
	// child queues for instead of testKey's (the account's queue).
	envQueueSession = "LEASE_TEST_QUEUE_SESSION"
)

func queueChild(ctx context.Context, store *data.Store, ttl time.Duration) error {
	name := os.Getenv(envQueueName)
	rounds, err := strconv.Atoi(os.Getenv(envQueueRound))
	if err != nil {
		return err
	}
	// PollInterval far beyond the test: only notifications, renewals and
	// expiries move a waiter.
	client, err := lease.New(store, lease.Config{TTL: ttl, PollInterval: time.Hour})
	if err != nil {
		return err
	}
	defer client.Close()
	key := testKey
	if session := os.Getenv(envQueueSession); session != "" {
		key.Session = session
	}
	p, err := client.Authorize(ctx, allowAll, key, name)
	if err != nil {
		return err
	}
	type result struct {
		l   *lease.Lease
		err error
	}
	queue := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			l, err := client.Queue(ctx, p)
			ch <- result{l, err}
		}()
		return ch
	}
	r := <-queue()
	for round := range rounds {
		if r.err != nil {
			return fmt.Errorf("round %d: %w", round, r.err)
		}
		fmt.Printf("granted %d\n", r.l.Fence())
		var next <-chan result
		if round < rounds-1 {
			next = queue()
			if err := waitOwnTicket(ctx, store, name); err != nil {
				return err
			}
		}
		if err := r.l.Release(ctx); err != nil {
			return err
		}
		if next != nil {
			r = <-next
		}
	}
	fmt.Println("done")
	return nil
}

// waitOwnTicket polls testKey's queue until it holds a ticket labelled name.
func waitOwnTicket(ctx context.Context, store *data.Store, name string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		q, err := store.QueueOf(ctx, testKey)
		if err != nil {
			return err
		}
		for _, t := range q {
			if t.Holder == name {
				return nil
			}
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	return fmt.Errorf("%s's next ticket never showed", name)
}

// startQueuers starts n queue children, in order: child i is started once
// the queue holds i tickets, so the queue's order is 0, 1, ..., n-1. The
// test's own run holds testKey meanwhile; release it to start the rounds.
func startQueuers(t *testing.T, db pgtest.DB, s *data.Store, n, rounds int, ttl time.Duration) []*proctest.Process {
	t.Helper()
	ctx := context.Background()
	var out []*proctest.Process
	for i := range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envChild+"="+childQueue, envChildDSN+"="+db.URL, envChildTTL+"="+ttl.String(),
			envQueueName+"="+queuerName(i), envQueueRound+"="+strconv.Itoa(rounds))
		p := proctest.Start(t, cmd)
		out = append(out, p)
		pgtest.Eventually(t, time.Minute, fmt.Sprintf("child %d's ticket", i), func() bool {
			if p.Exited() {
				t.Fatalf("child %d exited: %s%s", i, p.Stdout.String(), p.Stderr.String())
			}
			q, err := s.QueueOf(ctx, testKey)
			return err == nil && len(q) == i+1
		})
	}
	return out
}

func queuerName(i int) string { return fmt.Sprintf("queuer-%02d", i) }

// grants returns the holders of testKey's grants (acquired and taken_over
// events), oldest first, with their times on the database clock.
func grants(t *testing.T, db pgtest.DB) (holders []string, at []time.Time) {
	t.Helper()
	rows, err := db.Pool(t).Query(context.Background(), `
		SELECT holder, at FROM lease.event
		 WHERE account_id = $1 AND session_id = $2 AND kind IN ('acquired', 'taken_over')
		 ORDER BY id`, testKey.Account, testKey.Session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h string
			a time.Time
		)
		if err := rows.Scan(&h, &a); err != nil {
			t.Fatal(err)
		}
		holders, at = append(holders, h), append(at, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return holders, at
}

// TestQueueGrantsInOrderAcrossProcesses: 16 real processes queue in a known
// order on one session and each holds briefly; over the rounds (8, or
// $LEASETOP_QUEUE_ROUNDS) every grant goes to the next process in that
// order: none out of order.
func TestQueueGrantsInOrderAcrossProcesses(t *testing.T) {
	t.Parallel()
	const n = 16
	rounds := queueRounds(t, 8)
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	opener := mustHold(t, s)
	procs := startQueuers(t, db, s, n, rounds, 5*time.Second)
	if _, err := s.Release(ctx, testKey, opener); err != nil {
		t.Fatal(err)
	}
	for i, p := range procs {
		if code := p.Wait(t, 5*time.Minute*time.Duration(max(1, rounds/8))); code != 0 {
			t.Fatalf("child %d exited %d: %s%s", i, code, p.Stdout.String(), p.Stderr.String())
		}
	}
	holders, _ := grants(t, db)
	holders = holders[1:] // the test's own grant
	if len(holders) != n*rounds {
		t.Fatalf("%d grants, want %d", len(holders), n*rounds)
	}
	outOfOrder := 0
	for j, h := range holders {
		if h != queuerName(j%n) {
			outOfOrder++
			t.Errorf("grant %d went to %s, want %s", j, h, queuerName(j%n))
		}
	}
	t.Logf("%d grants in %d rounds of %d processes, %d out of order", len(holders), rounds, n, outOfOrder)
}

// TestQueueKilledWaiterCostsAtMostItsTTL: a queued waiter killed with
// SIGKILL stops renewing its ticket; the ticket leaves with a queue_left
// event (reason expired), the waiter behind it is granted the lease once
// that ticket has expired on the database clock (not before) and before it
// would have expired a second time (within a TTL of it), and the order goes
// on without it. The TTL is 10 s so that this bound, on the database clock,
// holds on a loaded machine: the waiter behind steps at the dead ticket's
// expiry, and at its own ticket's renewals at the latest, so a queue that
// honoured the expiry late, or not at all, still fails it.
func TestQueueKilledWaiterCostsAtMostItsTTL(t *testing.T) {
	t.Parallel()
	const (
		n    = 8
		dead = 3
		ttl  = 10 * time.Second
	)
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	opener := mustHold(t, s)
	procs := startQueuers(t, db, s, n, 1, ttl)
	procs[dead].Signal(t, syscall.SIGKILL)
	procs[dead].Wait(t, time.Minute)
	if _, err := s.Release(ctx, testKey, opener); err != nil {
		t.Fatal(err)
	}
	for i, p := range procs {
		if i == dead {
			continue
		}
		if code := p.Wait(t, 5*time.Minute); code != 0 {
			t.Fatalf("child %d exited %d: %s%s", i, code, p.Stdout.String(), p.Stderr.String())
		}
	}
	var (
		deadExpiry time.Time
		reason     string
	)
	if err := db.Pool(t).QueryRow(ctx, `SELECT expires_at, reason FROM lease.event WHERE kind = 'queue_left' AND holder = $1`,
		queuerName(dead)).Scan(&deadExpiry, &reason); err != nil || reason != "expired" {
		t.Fatalf("the killed waiter's queue_left event: reason %q, %v; want one, reason expired", reason, err)
	}
	holders, at := grants(t, db)
	holders, at = holders[1:], at[1:]
	var want []string
	for i := range n {
		if i != dead {
			want = append(want, queuerName(i))
		}
	}
	if fmt.Sprint(holders) != fmt.Sprint(want) {
		t.Fatalf("grants went to %v, want %v", holders, want)
	}
	next := at[dead] // the grant after the dead one's turn
	if next.Before(deadExpiry) {
		t.Fatalf("%s was granted at %v, before the killed waiter's ticket expired (%v)", want[dead], next, deadExpiry)
	}
	if late := next.Sub(deadExpiry); late > ttl {
		t.Fatalf("%s was granted %v after the killed waiter's ticket expired, more than its TTL (%v)", want[dead], late, ttl)
	}
	t.Logf("the killed waiter's turn cost %v past its ticket's expiry (TTL %v)", next.Sub(deadExpiry), ttl)
}

// mustHold acquires testKey for a run of the test's own and returns its id.
func mustHold(t *testing.T, s *data.Store) uuid.UUID {
	t.Helper()
	id := uuid.New()
	if _, err := s.Acquire(context.Background(), testKey, id, time.Hour, "opener"); err != nil {
		t.Fatal(err)
	}
	return id
}
