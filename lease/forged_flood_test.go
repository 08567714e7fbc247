package lease_test

import (
	"context"
	"encoding/json"
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

// floodTTL puts the first due renewal (TTL/3) far past the test: every
// renewal it sees was asked for by something other than the heartbeat.
const floodTTL = 5 * time.Minute

// attemptLog counts a Client's acquire and renewal attempts (Metrics).
type attemptLog struct {
	mu       sync.Mutex
	acquires int
	renewals int
}

func (a *attemptLog) hook() *lease.Metrics {
	return &lease.Metrics{
		AcquireFunc: func(time.Duration, error) { a.mu.Lock(); a.acquires++; a.mu.Unlock() },
		RenewFunc:   func(time.Duration, error) { a.mu.Lock(); a.renewals++; a.mu.Unlock() },
	}
}

func (a *attemptLog) counts() (acquires, renewals int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acquires, a.renewals
}

// forged returns a notification payload claiming an event of kind with id
// on key, by run; n makes it unique.
func forged(t *testing.T, id int64, kind data.Kind, key lease.Key, run uuid.UUID, n int) string {
	t.Helper()
	p := map[string]any{"id": id, "kind": kind, "at": time.Now(), "actor": "mallory", "reason": fmt.Sprint("flood ", n)}
	if kind != data.KindTruncated {
		p["account_id"], p["session_id"], p["run_id"], p["fence"] = key.Account, key.Session, run, 1
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lastEventID returns the newest event id.
func lastEventID(t *testing.T, db pgtest.DB) int64 {
	t.Helper()
	var id int64
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT max(id) FROM lease.event`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestForgedNotificationFloodCostsABoundedRead: a role with
// CONNECT only floods lease_events with every kind of notification the
// decoder accepts: "truncated" naming a real past event, a real event of
// another kind and an id far in the future; acquired, released, taken_over
// and force_released naming the holders' real keys, by other runs, with the
// ids of real past events and ids far in the future. Before, each
// "truncated" made every held lease renew at once (20 holders: thousands of
// renewals in seconds), and each event naming a key made its holder check.
// Now the notifier reads each batch back once, acts only on rows that exist
// and are new to its listener, and rate-limits resyncs: the holders renew
// at most once more (a resync the flood's drops may cause), check nothing,
// the waiter does not retry more often than its poll, and nobody loses a
// lease. A real forced release after the flood still ends its lease at once.
func TestForgedNotificationFloodCostsABoundedRead(t *testing.T) {
	db := pgtest.New(t)
	app, _ := pgtest.Login(t, db, "lease_app")
	store := pgtest.OpenStore(t, app, data.Options{})
	admin := db.Store(t)
	var log attemptLog
	c := newClient(t, store, lease.Config{TTL: floodTTL, Metrics: log.hook()})

	const holders = 20
	ls := holdMany(t, c, "flood", holders)
	canary := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "canary"}, "canary"))
	last := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "sentinel"}, "sentinel"))

	// A waiter on a key another Client holds: woken by a release of it.
	other := newClient(t, db.Store(t), lease.Config{TTL: floodTTL})
	busy := lease.Key{Account: "acct", Session: "busy"}
	acquire(t, other, permit(t, other, busy, "other"))
	var wlog attemptLog
	waiter := newClient(t, store, lease.Config{TTL: floodTTL, Metrics: wlog.hook()})
	wctx, cancelWait := context.WithCancel(context.Background())
	defer cancelWait()
	waited := waitAsync(wctx, waiter, permit(t, waiter, busy, "waiter"))

	// The listener is live once a real forced release reaches the holder.
	if _, err := admin.ForceRelease(context.Background(), canary.Key(), canary.RunID(), "canary"); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, canary, 30*time.Second); !errors.Is(cause, lease.ErrForceReleased) {
		t.Fatalf("canary lost with %v, want ErrForceReleased", cause)
	}
	pastID := lastEventID(t, db)
	var ownAcquire int64 // a real acquired event of a held key
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT min(id) FROM lease.event WHERE kind = 'acquired'`).Scan(&ownAcquire); err != nil {
		t.Fatal(err)
	}
	_, renewed := log.counts()
	checks, reads := lease.HolderChecks(c), lease.NotifierReads(c)
	wacq, _ := wlog.counts()
	started := time.Now()

	attacker := pgtest.ConnectNobody(t, db)
	future := pastID + 1_000_000
	var payloads []string
	n := 0
	for round := range 250 {
		key := ls[round%holders].Key()
		for _, p := range []struct {
			id   int64
			kind data.Kind
			key  lease.Key
		}{
			{pastID, data.KindTruncated, key},
			{ownAcquire, data.KindTruncated, key},
			{future + int64(round), data.KindTruncated, key},
			{ownAcquire, data.KindTakenOver, key},
			{pastID, data.KindForceReleased, key},
			{future + int64(round), data.KindTakenOver, key},
			{future + int64(round), data.KindReleased, busy},
			{pastID, data.KindReleased, busy},
		} {
			payloads = append(payloads, forged(t, p.id, p.kind, p.key, uuid.New(), n))
			n++
		}
	}
	for chunk := range 100 { // 100 transactions of 20, as they come
		attacker.Notify(t, payloads[chunk*20:(chunk+1)*20])
	}

	// Notifications arrive in order: once a real forced release sent after
	// the flood has ended its lease, the flood has been handled.
	if _, err := admin.ForceRelease(context.Background(), last.Key(), last.RunID(), "after the flood"); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, last, 30*time.Second); !errors.Is(cause, lease.ErrForceReleased) {
		t.Fatalf("sentinel lost with %v, want ErrForceReleased", cause)
	}
	elapsed := time.Since(started)
	_, renewedNow := log.counts()
	wacqNow, _ := wlog.counts()
	gotChecks, gotReads := lease.HolderChecks(c)-checks, lease.NotifierReads(c)-reads
	t.Logf("%d forged notifications in %s: %d renewals, %d holder checks, %d read-backs, %d waiter attempts",
		len(payloads), elapsed.Round(time.Millisecond), renewedNow-renewed, gotChecks, gotReads, wacqNow-wacq)

	// At most one resync round (the flood's drops), rate-limited: one
	// renewal per holder.
	if got := renewedNow - renewed; got > holders+1 {
		t.Errorf("%d renewals during the flood, want at most %d (one resync round)", got, holders+1)
	}
	if gotChecks > 1 { // the sentinel's
		t.Errorf("%d holder checks during the flood, want at most 1 (the real forced release)", gotChecks)
	}
	if gotReads > int64(len(payloads)) {
		t.Errorf("%d read-backs for %d notifications, want at most one a notification", gotReads, len(payloads))
	}
	// The waiter tries on its poll (2 s), once on a resync, never on a
	// forged release.
	if got, bound := wacqNow-wacq, 2+int(elapsed/lease.DefaultPollInterval); got > bound {
		t.Errorf("the waiter tried %d times in %s, want at most %d (its poll and one resync)", got, elapsed, bound)
	}
	for k, l := range ls {
		if st := l.State().Status; st != lease.Held {
			t.Errorf("lease %d is %v after the flood (%v), want held", k, st, l.Err())
		}
	}
	cancelWait()
	if l, err := waited(); err == nil {
		t.Errorf("the waiter acquired %v, which another Client holds", l.Key())
	}
}

// TestResyncsRenewAtMostOnceAGap: a flood that makes the
// listener drop notifications (its consumer, which reads each batch back,
// has room for 16) makes it ask for a resync after every run of drops, and
// every resync makes the held leases renew early. The notifier hands on at
// most one resync every half renew interval: however long the flood, a
// held lease renews early at most once a gap (here none after the
// listener's first, 10 s away), and loses nothing.
func TestResyncsRenewAtMostOnceAGap(t *testing.T) {
	db := pgtest.New(t)
	app, _ := pgtest.Login(t, db, "lease_app")
	store := pgtest.OpenStore(t, app, data.Options{})
	var log attemptLog
	cfg := lease.Config{TTL: time.Minute, Metrics: log.hook(), Listener: data.ListenerConfig{Buffer: 16}}
	c := newClient(t, store, cfg)
	const holders = 20
	ls := holdMany(t, c, "drop", holders)
	last := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "sentinel"}, "sentinel"))
	pgtest.Eventually(t, 30*time.Second, "the resync at the listener's start", func() bool {
		return lease.ResyncsAsked(c) > 0
	})
	_, renewed := log.counts()
	asked := lease.ResyncsAsked(c)
	started := time.Now()

	attacker := pgtest.ConnectNobody(t, db)
	future := lastEventID(t, db) + 1_000_000
	for burst := range 10 { // 10 commits of 2000: each arrives at once
		payloads := make([]string, 2000)
		for i := range payloads {
			n := burst*len(payloads) + i
			payloads[i] = forged(t, future+int64(n), data.KindTakenOver, ls[n%holders].Key(), uuid.New(), n)
		}
		attacker.Notify(t, payloads)
	}
	if _, err := db.Store(t).ForceRelease(context.Background(), last.Key(), last.RunID(), "after the flood"); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, last, 30*time.Second); !errors.Is(cause, lease.ErrForceReleased) {
		t.Fatalf("sentinel lost with %v, want ErrForceReleased", cause)
	}
	elapsed := time.Since(started)
	_, renewedNow := log.counts()
	gotAsked := lease.ResyncsAsked(c) - asked
	t.Logf("20000 forged notifications in %s: %d resyncs asked, %d renewals", elapsed.Round(time.Millisecond), gotAsked, renewedNow-renewed)
	if gotAsked < 2 {
		t.Fatalf("%d resyncs asked during the flood, want drops to ask for several", gotAsked)
	}
	gap := cfg.TTL / 3 / 2
	if got, bound := renewedNow-renewed, (holders+1)*int(1+elapsed/gap); got > bound {
		t.Errorf("%d renewals in %s of flood, want at most %d (one a lease every %s)", got, elapsed, bound, gap)
	}
	for k, l := range ls {
		if st := l.State().Status; st != lease.Held {
			t.Errorf("lease %d is %v after the flood (%v), want held", k, st, l.Err())
		}
	}
}
