package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// batches records the batches of renewals a Client sends.
type batches struct {
	mu    sync.Mutex
	sizes []int
	sent  []time.Time
}

func watchBatches(c *lease.Client) *batches {
	b := &batches{}
	lease.SetBatchHook(c, func(n int, sent time.Time) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.sizes = append(b.sizes, n)
		b.sent = append(b.sent, sent)
	})
	return b
}

// calls returns how many RenewMany calls were sent, how many renewals they
// carried and the largest batch.
func (b *batches) calls() (calls, renewals, largest int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range b.sizes {
		renewals += n
		largest = max(largest, n)
	}
	return len(b.sizes), renewals, largest
}

// sentAt reports whether a batch was sent at t.
func (b *batches) sentAt(t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.sent {
		if s.Equal(t) {
			return true
		}
	}
	return false
}

// holdMany acquires n leases on keys acct/<prefix><k>, one after another.
func holdMany(t *testing.T, c *lease.Client, prefix string, n int) []*lease.Lease {
	t.Helper()
	ls := make([]*lease.Lease, n)
	for k := range ls {
		ls[k] = acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: fmt.Sprintf("%s%d", prefix, k)}, "batch"))
	}
	return ls
}

// renewedPast waits until every lease's server expiry is past its expiry in
// from, and reports the new expiries.
func renewedPast(t *testing.T, what string, ls []*lease.Lease, from []time.Time) []time.Time {
	t.Helper()
	pgtest.Eventually(t, 30*time.Second, what, func() bool {
		for k, l := range ls {
			if !l.State().ExpiresAt.After(from[k]) {
				return false
			}
		}
		return true
	})
	out := make([]time.Time, len(ls))
	for k, l := range ls {
		out[k] = l.State().ExpiresAt
	}
	return out
}

func expiries(ls []*lease.Lease) []time.Time {
	out := make([]time.Time, len(ls))
	for k, l := range ls {
		out[k] = l.State().ExpiresAt
	}
	return out
}

// One Client holding many leases, acquired one after another, renews them
// together: within a few rounds one RenewMany call carries all of them, and
// the Client sends fewer calls than renewals. Each lease's local deadline is
// the send time of the batch that renewed it + TTL - SafetyMargin.
func TestClientRenewsItsLeasesInBatches(t *testing.T) {
	db := pgtest.New(t)
	cfg := lease.Config{TTL: 10 * time.Second, RenewInterval: time.Second, SafetyMargin: time.Second}
	c := newClient(t, db.Store(t), cfg)
	b := watchBatches(c)
	const n = 20
	ls := holdMany(t, c, "s", n)

	pgtest.Eventually(t, 30*time.Second, "one batch renewing all the leases", func() bool {
		_, _, largest := b.calls()
		return largest == n
	})
	exp := renewedPast(t, "every lease renewed", ls, expiries(ls))
	renewedPast(t, "every lease renewed again", ls, exp)
	calls, renewals, _ := b.calls()
	if calls*2 > renewals {
		t.Errorf("%d RenewMany calls for %d renewals of %d leases, want at most half as many calls", calls, renewals, n)
	}
	for _, l := range ls {
		st := l.State()
		if st.Status != lease.Held {
			t.Fatalf("%s: %v, want held", l.Key(), st.Status)
		}
		if sent := st.Deadline.Add(-(cfg.TTL - cfg.SafetyMargin)); !b.sentAt(sent) {
			t.Errorf("%s: deadline %v is not a batch's send time + TTL - margin", l.Key(), st.Deadline)
		}
	}
}

// A lease taken over while it is renewed in batches with others is lost
// alone, with the cause it has today (ErrTakenOver) naming the takeover; the
// others go on renewing in batches.
func TestBatchedLeaseTakenOverIsLostAlone(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	cfg := lease.Config{TTL: 10 * time.Second, RenewInterval: time.Second, SafetyMargin: time.Second}
	c := newClient(t, store, cfg)
	b := watchBatches(c)
	ls := holdMany(t, c, "s", 5)
	pgtest.Eventually(t, 30*time.Second, "one batch renewing all the leases", func() bool {
		_, _, largest := b.calls()
		return largest == len(ls)
	})
	victim, others := ls[2], append(append([]*lease.Lease{}, ls[:2]...), ls[3:]...)

	// The victim's row expires and another run takes it over, in one
	// transaction, so no renewal falls in between.
	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	k := victim.Key()
	if _, err := tx.Exec(ctx, `UPDATE lease.session_lease SET expires_at = clock_timestamp() - interval '1 ms'
		WHERE account_id = $1 AND session_id = $2`, k.Account, k.Session); err != nil {
		t.Fatal(err)
	}
	thief := uuid.New()
	var fence int64
	if err := tx.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 hour', 'thief')`, k.Account, k.Session, thief).Scan(&fence); err != nil {
		t.Fatalf("take over: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	cause := waitDone(t, victim, 30*time.Second)
	if !errors.Is(cause, lease.ErrTakenOver) {
		t.Errorf("victim's cause %v, want ErrTakenOver", cause)
	}
	exp := renewedPast(t, "the others renewed after the takeover", others, expiries(others))
	renewedPast(t, "the others renewed again", others, exp)
	for _, l := range others {
		if st := l.State(); st.Status != lease.Held {
			t.Errorf("%s: %v after the victim's loss, want held", l.Key(), st.Status)
		}
	}
	if _, _, largest := b.calls(); largest < len(others) {
		t.Errorf("largest batch %d, want the others renewed together", largest)
	}
	// The holder watch (a read) or the batch's renewal (a renew_rejected
	// zombie line) may notice first; either names the takeover as the cause.
	var lost *lease.LostError
	if !errors.As(cause, &lost) || lost.By.Kind != data.KindTakenOver || lost.By.RunID != data.PublicRunID(thief) {
		t.Errorf("victim's cause %v, want the thief's takeover", cause)
	}
}

// A lease whose row a fenced write holds locked (check_fence's FOR SHARE)
// does not hold back the others in its batch: they go on renewing while it
// waits for the lock alone, and it renews again once the write commits.
func TestLockedLeaseDoesNotDelayItsBatch(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	cfg := lease.Config{TTL: 20 * time.Second, RenewInterval: 300 * time.Millisecond, SafetyMargin: 2 * time.Second}
	c := newClient(t, db.Store(t), cfg)
	ls := holdMany(t, c, "s", 4)
	busy, others := ls[0], ls[1:]

	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if err := busy.CheckFence(ctx, tx); err != nil {
		t.Fatalf("CheckFence: %v", err)
	}
	locked := busy.State().ExpiresAt
	exp := renewedPast(t, "the others renewed while the busy lease's row is locked", others, expiries(others))
	renewedPast(t, "the others renewed again", others, exp)
	if got := busy.State().ExpiresAt; !got.Equal(locked) {
		t.Errorf("the busy lease's expiry moved to %v while its row was locked", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	renewedPast(t, "the busy lease renewed after the fenced write", []*lease.Lease{busy}, []time.Time{locked})
	if st := busy.State(); st.Status == lease.Lost || st.Status == lease.Released {
		t.Errorf("busy lease %v, want it kept", st.Status)
	}
}

// A database migrated before lease.renew_many (the function missing) keeps
// its leases: the Client falls back to renewing them one by one.
func TestClientRenewsOneByOneWithoutRenewMany(t *testing.T) {
	db := pgtest.New(t)
	if _, err := db.Conn(t).Exec(context.Background(), `DROP FUNCTION lease.renew_many`); err != nil {
		t.Fatal(err)
	}
	cfg := lease.Config{TTL: 10 * time.Second, RenewInterval: 300 * time.Millisecond, SafetyMargin: time.Second}
	c := newClient(t, db.Store(t), cfg)
	ls := holdMany(t, c, "s", 3)
	exp := renewedPast(t, "every lease renewed without lease.renew_many", ls, expiries(ls))
	renewedPast(t, "every lease renewed again", ls, exp)
	for _, l := range ls {
		if st := l.State(); st.Status != lease.Held {
			t.Errorf("%s: %v, want held", l.Key(), st.Status)
		}
	}
}

// A lease released while its batch is in flight (here: blocked behind a
// table lock) lets the batch answer before its release reaches the server:
// the renewal finds the row still there, and no renew_rejected zombie is
// recorded for a run that released cleanly. The others keep their leases.
// (Without the wait, the release queues behind the same lock at once.) The
// release is seen waiting for its batch (the settle hook), and not at the
// server, before the lock goes: an event, where a fixed window could end
// before a release sent too early had reached the server.
func TestReleaseWaitsForItsBatchInFlight(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	cfg := lease.Config{TTL: 20 * time.Second, RenewInterval: time.Second, SafetyMargin: 2 * time.Second,
		RenewTimeout: 10 * time.Second}
	c := newClient(t, store, cfg)
	b := watchBatches(c)
	settling := make(chan lease.Key, 8)
	lease.SetSettleHook(c, func(key lease.Key) { settling <- key })
	ls := holdMany(t, c, "s", 3)
	pgtest.Eventually(t, 30*time.Second, "one batch renewing all the leases", func() bool {
		_, _, largest := b.calls()
		return largest == len(ls)
	})

	owner := db.Conn(t)
	tx, err := owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `LOCK TABLE lease.session_lease IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	watch := db.Conn(t)
	pgtest.Eventually(t, 30*time.Second, "a batch blocked behind the table lock", func() bool {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%lease.renew_many%' AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	released := make(chan error, 1)
	go func() { released <- ls[0].Release(ctx) }()
	// The release waits for its batch, and has not reached the server: it
	// would queue behind the same lock and could then delete the row before
	// the renewal runs.
	select {
	case key := <-settling:
		if key != ls[0].Key() {
			t.Fatalf("%s waits for its batch, want the released %s", key, ls[0].Key())
		}
	case err := <-released:
		t.Fatalf("Release returned (%v) while its lease's renewal was blocked in flight", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the released lease did not wait for its batch in flight within 30 s")
	}
	var n int
	if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE query LIKE '%lease.release%' AND query NOT LIKE '%pg_stat_activity%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("the release reached the server while its lease's renewal was in flight")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, _, ok := holdsRow(t, store, ls[0].Key()); ok {
		t.Errorf("%s's row is still there after Release", ls[0].Key())
	}
	evs, err := store.EventsFor(ctx, ls[0].Key(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == data.KindRenewRejected {
			t.Errorf("a renew_rejected event (%s) for a lease released cleanly", e.Reason)
		}
	}
	for _, l := range ls[1:] {
		if st := l.State(); st.Status == lease.Lost || st.Status == lease.Released {
			t.Errorf("%s: %v, want kept", l.Key(), st.Status)
		}
	}
}

// holdsRow reads key's row: its public run id and fence, and whether there is one.
func holdsRow(t *testing.T, s *data.Store, key lease.Key) (uuid.UUID, int64, bool) {
	t.Helper()
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range snap.Leases {
		if l.Key == key {
			return l.RunID, l.Fence, true
		}
	}
	return uuid.Nil, 0, false
}
