package lease_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/lease"
)

// slotWaiters counts testKey's account's live tickets that wait for a slot.
func slotWaiters(t *testing.T, db pgtest.DB) int {
	t.Helper()
	var n int
	if err := db.Pool(t).QueryRow(context.Background(), `SELECT count(*) FROM lease.queue_ticket
		WHERE account_id = $1 AND for_slot AND expires_at > clock_timestamp()`, testKey.Account).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// accountGrants returns the sessions of testKey's account granted, in the
// order of their acquired events, but for testKey's own.
func accountGrants(t *testing.T, db pgtest.DB) []string {
	t.Helper()
	rows, err := db.Pool(t).Query(context.Background(), `SELECT session_id FROM lease.event
		WHERE account_id = $1 AND kind = 'acquired' AND session_id <> $2 ORDER BY id`, testKey.Account, testKey.Session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLimitQueueGrantsInAccountOrder: in an account at its limit of one run,
// four clients, each with its own connections, Queue for four different
// sessions in a known order, and a fifth Waits (no ticket) after them. When
// the holder releases, each grant goes to the oldest waiter of the account,
// which holds briefly and releases: the grants follow the order of
// queueing, and the run that only waited comes last, though it retried at
// every release.
func TestLimitQueueGrantsInAccountOrder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := pgtest.New(t)
	admin := db.Store(t)
	if _, err := admin.SetLimit(ctx, testKey.Account, "", 1); err != nil {
		t.Fatal(err)
	}
	opener := mustHold(t, admin)
	const n = 4
	session := func(i int) string { return fmt.Sprintf("waiter-%d", i) }
	done := make(chan error, n+1)
	start := func(i int, queue bool) {
		c, err := lease.New(db.Store(t), lease.Config{TTL: 5 * time.Second, PollInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		p, err := c.Authorize(ctx, allowAll, lease.Key{Account: testKey.Account, Session: session(i)}, session(i))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var l *lease.Lease
			if queue {
				l, err = c.Queue(ctx, p)
			} else {
				l, err = c.Wait(ctx, p)
			}
			if err == nil {
				err = l.Release(ctx)
			}
			done <- err
		}()
	}
	for i := range n {
		start(i, true)
		pgtest.Eventually(t, time.Minute, fmt.Sprintf("waiter %d in the account's queue", i), func() bool {
			return slotWaiters(t, db) == i+1
		})
	}
	start(n, false)
	pgtest.Eventually(t, time.Minute, "the waiting run's refusal", func() bool {
		var refused bool
		err := db.Pool(t).QueryRow(ctx, `SELECT EXISTS (SELECT FROM lease.event
			WHERE kind = 'limit_refused' AND session_id = $1)`, session(n)).Scan(&refused)
		return err == nil && refused
	})
	if _, err := admin.Release(ctx, testKey, opener); err != nil {
		t.Fatal(err)
	}
	for range n + 1 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("waiters still waiting; grants so far %v", accountGrants(t, db))
		}
	}
	got := fmt.Sprint(accountGrants(t, db))
	if want := fmt.Sprint([]string{session(0), session(1), session(2), session(3), session(4)}); got != want {
		t.Fatalf("grants went to %s, want %s", got, want)
	}
}

// TestLimitQueueKilledWaiterCostsAtMostItsTTL: two real processes queue, in
// order, for two sessions of an account at its limit of one run; the first
// is killed with SIGKILL. When the holder releases, the slot waits for the
// killed waiter's ticket (not a second longer than needed: the second
// waiter is granted after that ticket expired on the database clock, and
// within a TTL of it), and the ticket leaves with a queue_left event
// (reason expired), though nobody touches its session.
func TestLimitQueueKilledWaiterCostsAtMostItsTTL(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := s.SetLimit(ctx, testKey.Account, "", 1); err != nil {
		t.Fatal(err)
	}
	opener := mustHold(t, s)
	var procs []*proctest.Process
	for i, session := range []string{"dies", "lives"} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envChild+"="+childQueue, envChildDSN+"="+pgtest.AppURL(t, db.URL, "queue-"+session),
			envChildTTL+"="+ttl.String(), envQueueName+"="+session, envQueueRound+"=1", envQueueSession+"="+session)
		p := proctest.Start(t, cmd)
		procs = append(procs, p)
		pgtest.Eventually(t, time.Minute, session+"'s ticket in the account's queue", func() bool {
			if p.Exited() {
				t.Fatalf("child %s exited: %s%s", session, p.Stdout.String(), p.Stderr.String())
			}
			return slotWaiters(t, db) == i+1
		})
	}
	var named bool // the wait below sees the killed waiter's backends by their name
	if err := db.Pool(t).QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'queue-dies')`).Scan(&named); err != nil || !named {
		t.Fatalf("no backend named queue-dies (%v): the waiter's connections lost their application_name", err)
	}
	procs[0].Signal(t, syscall.SIGKILL)
	procs[0].Wait(t, time.Minute)
	// An acquire the killed waiter sent just before (a loaded machine's
	// backend may not have run it yet) must not meet the freed slot.
	pgtest.WaitAppGone(t, db.Pool(t), "queue-dies")
	if _, err := s.Release(ctx, testKey, opener); err != nil {
		t.Fatal(err)
	}
	if code := procs[1].Wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("the live waiter exited %d: %s%s", code, procs[1].Stdout.String(), procs[1].Stderr.String())
	}
	var deadExpiry, granted time.Time
	var reason string
	if err := db.Pool(t).QueryRow(ctx, `SELECT expires_at, reason FROM lease.event
		WHERE kind = 'queue_left' AND session_id = 'dies'`).Scan(&deadExpiry, &reason); err != nil || reason != "expired" {
		t.Fatalf("the killed waiter's queue_left event: reason %q, %v; want one, reason expired", reason, err)
	}
	if err := db.Pool(t).QueryRow(ctx, `SELECT at FROM lease.event
		WHERE kind = 'acquired' AND session_id = 'lives'`).Scan(&granted); err != nil {
		t.Fatal(err)
	}
	if granted.Before(deadExpiry) {
		t.Fatalf("the live waiter was granted at %v, before the killed waiter's ticket expired (%v)", granted, deadExpiry)
	}
	if late := granted.Sub(deadExpiry); late > ttl {
		t.Fatalf("the live waiter was granted %v after the killed waiter's ticket expired, more than a TTL (%v)", late, ttl)
	}
	if got := accountGrants(t, db); fmt.Sprint(got) != "[lives]" {
		t.Fatalf("grants in the account: %v, want [lives]", got)
	}
}

// acquireCounter counts the acquire calls made on the connections it
// traces.
type acquireCounter struct{ n atomic.Int64 }

// TraceQueryStart counts an acquire call.
func (a *acquireCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if d.SQL == sqlcall.Acquire || d.SQL == sqlcall.AcquireWith {
		a.n.Add(1)
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (a *acquireCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countedStore is a store of its own on db whose acquire calls a counts.
func countedStore(t *testing.T, db pgtest.DB, a *acquireCounter) *data.Store {
	t.Helper()
	cfg, err := data.ParsePoolConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = a
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return data.New(pool)
}

// TestLimitQueueReleaseWakesTheHead: n clients, each a process's (its own
// store and listener), Queue for sessions of an account at its limit of
// one run, and release as soon as they are granted. The slot passes down
// the queue n times; a release wakes the head of the account's queue, not
// every waiter, so the acquire calls the n grants cost stay a small
// multiple of n (each grant's, and the next head's one try that may find
// the slot still held), not one per waiter per release (about n*n/2 or
// more: each woken waiter tries, and the database admits only the oldest).
func TestLimitQueueReleaseWakesTheHead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := pgtest.New(t)
	admin := db.Store(t)
	if _, err := admin.SetLimit(ctx, testKey.Account, "", 1); err != nil {
		t.Fatal(err)
	}
	opener := mustHold(t, admin)
	const n = 10
	counters := make([]acquireCounter, n)
	done := make(chan error, n)
	for i := range n {
		// Nothing but a notification wakes a waiter within the test: no
		// poll, no renewal of its ticket (a third of the TTL).
		c, err := lease.New(countedStore(t, db, &counters[i]), lease.Config{TTL: 10 * time.Minute, PollInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		session := fmt.Sprintf("waiter-%d", i)
		p, err := c.Authorize(ctx, allowAll, lease.Key{Account: testKey.Account, Session: session}, session)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			l, err := c.Queue(ctx, p)
			if err == nil {
				err = l.Release(ctx)
			}
			done <- err
		}()
		pgtest.Eventually(t, time.Minute, session+" in the account's queue", func() bool { return slotWaiters(t, db) == i+1 })
	}
	calls := func() int64 {
		var sum int64
		for i := range counters {
			sum += counters[i].n.Load()
		}
		return sum
	}
	// Each waiter tried twice as it joined: refused at the limit, then
	// again in the account's queue.
	pgtest.Eventually(t, time.Minute, "each waiter's two tries as it joined", func() bool {
		for i := range counters {
			if counters[i].n.Load() < 2 {
				return false
			}
		}
		return true
	})
	before := calls()
	if _, err := admin.Release(ctx, testKey, opener); err != nil {
		t.Fatal(err)
	}
	for range n {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("waiters still waiting; grants so far %v", accountGrants(t, db))
		}
	}
	got, most := calls()-before, int64(3*n)
	t.Logf("%d grants cost %d acquire calls", n, got)
	if got > most {
		t.Fatalf("the %d grants cost %d acquire calls, want at most %d: a release must wake the head of the account's queue, not every waiter",
			n, got, most)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("waiter-%d", i)
	}
	if got := accountGrants(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("grants went to %v, want %v", got, want)
	}
}
