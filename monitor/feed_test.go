package monitor_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// startMirror runs a mirror of s until the test ends.
func startMirror(t *testing.T, s *data.Store, cfg monitor.FeedConfig) *monitortest.Mirror {
	t.Helper()
	m := monitortest.NewMirror(s, cfg, monitor.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m
}

// waitFor waits up to 30 s for cond.
func waitFor(t *testing.T, m *monitortest.Mirror, what string, cond func(s *monitor.State) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, cond); err != nil {
		var desc string
		m.Read(func(s *monitor.State) {
			desc = fmt.Sprintf("leases %d, events %v, health %+v", s.Len(), monitor.IDs(s.Events()), s.Health(time.Now()))
		})
		t.Fatalf("waiting for %s: %v (%s)", what, err, desc)
	}
}

// dbLeases reads session_lease directly.
func dbLeases(t *testing.T, conn *pgx.Conn) map[data.Key]data.Lease {
	t.Helper()
	rows, err := conn.Query(context.Background(),
		`SELECT account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at FROM lease.session_lease`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[data.Key]data.Lease{}
	for rows.Next() {
		var l data.Lease
		if err := rows.Scan(&l.Account, &l.Session, &l.RunID, &l.Holder, &l.Fence, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt); err != nil {
			t.Fatal(err)
		}
		out[l.Key] = l
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

// sameAsDB reports how the state differs from want ("" when equal).
func sameAsDB(s *monitor.State, want map[data.Key]data.Lease) string {
	if s.Len() != len(want) {
		return fmt.Sprintf("%d leases, database has %d", s.Len(), len(want))
	}
	for k, w := range want {
		g, ok := s.Lease(k)
		if !ok || g.RunID != w.RunID || g.Fence != w.Fence || g.Holder != w.Holder ||
			!g.ExpiresAt.Equal(w.ExpiresAt) || !g.AcquiredAt.Equal(w.AcquiredAt) {
			return fmt.Sprintf("%v: %+v, database has %+v", k, g, w)
		}
	}
	return ""
}

// eventIDs returns every event id in the database above after.
func eventIDs(t *testing.T, conn *pgx.Conn, after int64) []int64 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT id FROM lease.event WHERE id > $1 ORDER BY id`, after)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// assertMirrorsDB waits until the mirror equals the database and has seen
// every event after its baseline exactly once.
func assertMirrorsDB(t *testing.T, m *monitortest.Mirror, conn *pgx.Conn) {
	t.Helper()
	want := dbLeases(t, conn)
	var diff string
	waitFor(t, m, "the state to equal the database", func(s *monitor.State) bool {
		diff = sameAsDB(s, want)
		return diff == ""
	})
	var baseline int64
	m.Read(func(s *monitor.State) { baseline = s.Baseline() })
	all := eventIDs(t, conn, baseline)
	waitFor(t, m, "every event to be seen", func(s *monitor.State) bool {
		for _, id := range all {
			if !s.Seen(id) {
				return false
			}
		}
		return true
	})
	m.Read(func(s *monitor.State) {
		if got, want := s.Applied(), int64(len(all)); got != want {
			t.Errorf("applied %d events, database has %d after the baseline %d", got, want, baseline)
		}
	})
}

func TestMirrorSeesAcquireAndTakeover(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	m := startMirror(t, s, monitor.FeedConfig{})
	waitFor(t, m, "the first resync", func(s *monitor.State) bool { return s.Synced() })

	k := data.Key{Account: "acme", Session: "chat-1"}
	old := uuid.New()
	// Acquire with plain SQL, as any client would.
	if _, err := conn.Exec(context.Background(), `SELECT lease.acquire($1, $2, $3, '300 ms', 'dev-a')`, k.Account, k.Session, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "the acquired lease", func(s *monitor.State) bool { l, ok := s.Lease(k); return ok && l.RunID == data.PublicRunID(old) })

	// Let it expire on the server clock, then take it over.
	var exp time.Time
	if err := conn.QueryRow(context.Background(), `SELECT expires_at FROM lease.session_lease`).Scan(&exp); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitServerPast(t, conn, exp)
	nu := uuid.New()
	g := monitor.MustAcquire(t, s, k, nu, time.Minute)
	waitFor(t, m, "the takeover event", func(s *monitor.State) bool {
		evs := s.Events()
		return len(evs) > 0 && evs[0].Kind == data.KindTakenOver
	})
	m.Read(func(s *monitor.State) {
		ev := s.Events()[0]
		if ev.RunID != data.PublicRunID(nu) || ev.PrevRunID != data.PublicRunID(old) || ev.Fence != g.Fence || ev.PrevFence >= ev.Fence {
			t.Errorf("takeover = %+v, want run %v <- %v and a higher fence", ev, nu, old)
		}
		if !ev.At.After(ev.PrevExpiresAt) {
			t.Errorf("takeover at %v is not after the old expiry %v", ev.At, ev.PrevExpiresAt)
		}
	})
	assertMirrorsDB(t, m, conn)
}

func TestMirrorSeesRenewalsWithoutNotify(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	g := monitor.MustAcquire(t, s, k, run, 20*time.Second)
	m := startMirror(t, s, monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
	waitFor(t, m, "the lease", func(s *monitor.State) bool { _, ok := s.Lease(k); return ok })
	exp, err := s.Renew(context.Background(), k, run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.After(g.ExpiresAt) {
		t.Fatalf("renewal did not extend: %v <= %v", exp, g.ExpiresAt)
	}
	waitFor(t, m, "the renewal (delta read)", func(s *monitor.State) bool { l, _ := s.Lease(k); return l.ExpiresAt.Equal(exp) })
	m.Read(func(s *monitor.State) {
		if s.NotifyRenewals() {
			t.Error("NotifyRenewals = true, want false by default")
		}
	})
	assertMirrorsDB(t, m, conn)
}

func TestMirrorUsesRenewalNotifications(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	if err := data.SetNotifyRenewals(context.Background(), s.Pool(), true); err != nil {
		t.Fatal(err)
	}
	k := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	monitor.MustAcquire(t, s, k, run, 20*time.Second)
	// A delta interval far beyond the test: only a notification can deliver
	// the renewal in time.
	m := startMirror(t, s, monitor.FeedConfig{DeltaInterval: time.Hour, NotifiedInterval: time.Hour})
	waitFor(t, m, "the lease", func(s *monitor.State) bool { _, ok := s.Lease(k); return ok && s.NotifyRenewals() })
	exp, err := s.Renew(context.Background(), k, run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "the renewal notification", func(s *monitor.State) bool { l, _ := s.Lease(k); return l.ExpiresAt.Equal(exp) })
}

// TestMirrorUnderChurn: several clients with their own connections acquire,
// renew, release, take over and force-release concurrently; afterwards the
// mirror equals the database and has applied every event exactly once.
func TestMirrorUnderChurn(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	m := startMirror(t, s, monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
	waitFor(t, m, "the first resync", func(s *monitor.State) bool { return s.Synced() })

	clients := make([]*data.Store, 4)
	for i := range clients {
		clients[i] = db.Store(t) // its own pool: independent connections
	}
	churn(clients, 60)
	assertMirrorsDB(t, m, conn)
	m.Read(func(s *monitor.State) {
		if s.Applied() < 20 {
			t.Errorf("applied %d events, want a real churn (>= 20)", s.Applied())
		}
	})
}

// churn has each client acquire, renew, release, take over and force-release
// ops times at random on six sessions, all at once.
func churn(clients []*data.Store, ops int) {
	var wg sync.WaitGroup
	for w, client := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			held := map[data.Key]uuid.UUID{}
			for range ops {
				k := data.Key{Account: "acct", Session: fmt.Sprintf("s%d", rng.IntN(6))}
				ctx := context.Background()
				switch op := rng.IntN(5); {
				case op <= 1:
					run := uuid.New()
					if _, err := client.Acquire(ctx, k, run, time.Duration(50+rng.IntN(200))*time.Millisecond, fmt.Sprintf("w%d", w)); err == nil {
						held[k] = run
					}
				case op == 2 && held[k] != uuid.Nil:
					_, _ = client.Renew(ctx, k, held[k], time.Second)
				case op == 3 && held[k] != uuid.Nil:
					_, _ = client.Release(ctx, k, held[k])
					delete(held, k)
				case op == 4:
					_, _ = client.ForceReleaseAny(ctx, k, "churn")
				}
			}
		})
	}
	wg.Wait()
}

// listenerPID returns the backend pid of the monitor's listener.
func listenerPID(t *testing.T, conn *pgx.Conn, dbName string) int {
	t.Helper()
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := conn.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = $1 AND application_name = 'leasetop listener'`, dbName).Scan(&pid)
		if err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listener backend: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling pg_stat_activity, bounded by the deadline
	}
}

// TestMirrorRecoversFromLostListener: the listener's backend is terminated
// while new connections are refused, transitions happen during the outage
// (one of them a late commit of a lower event id), and after the database
// accepts connections again the mirror is LIVE and equal to it.
func TestMirrorRecoversFromLostListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)                                // the test's writer, connected before the outage
	late := db.Conn(t)                                // holds a transaction open across the outage
	admin, err := pgx.Connect(ctx, pgtest.AdminURL()) // on another database: terminates and re-allows connections
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	kLate := data.Key{Account: "acme", Session: "late"}
	m := startMirror(t, s, monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
	waitFor(t, m, "LIVE", func(s *monitor.State) bool { return s.Synced() && s.Health(time.Now()).Link == monitor.LinkLive })

	// A transaction draws an event id and stays open.
	tx, err := late.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '1 min', 'late')`, kLate.Account, kLate.Session, uuid.New()); err != nil {
		t.Fatal(err)
	}
	// A later id commits first and is seen live.
	mustAcquireSQL(t, conn, data.Key{Account: "acme", Session: "early"})
	waitFor(t, m, "the early event", func(s *monitor.State) bool { return s.Len() == 1 })

	// Outage: refuse new connections and cut the listener.
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db.Name}.Sanitize()+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	allow := func() {
		_, _ = admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db.Name}.Sanitize()+` ALLOW_CONNECTIONS true`)
	}
	t.Cleanup(allow)
	pid := listenerPID(t, admin, db.Name)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "RECONNECTING", func(s *monitor.State) bool {
		l := s.Health(time.Now()).Link
		return l == monitor.LinkReconnecting || l == monitor.LinkDown
	})
	// Transitions nobody is listening for.
	if err := tx.Commit(ctx); err != nil { // the lower id commits now
		t.Fatal(err)
	}
	for i := range 3 {
		mustAcquireSQL(t, conn, data.Key{Account: "acme", Session: fmt.Sprintf("outage-%d", i)})
	}
	if _, err := conn.Exec(ctx, `SELECT lease.force_release('acme', 'early', NULL, 'during outage')`); err != nil {
		t.Fatal(err)
	}

	allow()
	waitFor(t, m, "LIVE again", func(s *monitor.State) bool { return s.Health(time.Now()).Link == monitor.LinkLive })
	assertMirrorsDB(t, m, conn)
	m.Read(func(s *monitor.State) {
		if _, ok := s.Lease(kLate); !ok {
			t.Error("the late-committed lease is missing")
		}
	})
}

func mustAcquireSQL(t *testing.T, conn *pgx.Conn, k data.Key) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `SELECT lease.acquire($1, $2, $3, '1 min', 'sql')`, k.Account, k.Session, uuid.New()); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorNeedsOnlySelect runs the mirror as a login role that is only a
// lease_reader.
func TestMirrorNeedsOnlySelect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	reader, err := data.Open(ctx, db.ReaderURL(t))
	if err != nil {
		t.Fatalf("open as lease_reader: %v", err)
	}
	t.Cleanup(reader.Close)
	m := startMirror(t, reader, monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
	mustAcquireSQL(t, conn, data.Key{Account: "a", Session: "s"})
	waitFor(t, m, "the lease", func(s *monitor.State) bool { return s.Len() == 1 })
	assertMirrorsDB(t, m, conn)
	m.Read(func(s *monitor.State) {
		if h := s.Health(time.Now()); h.Err != nil {
			t.Errorf("health error as lease_reader: %v", h.Err)
		}
	})
}

// TestFeedFollowsLimitEvents: an operator's limit_set and limit_removed,
// which name an account and no session nor run, come through the live
// feed as events (not dropped as malformed notifications), as does a
// run's limit_refused.
func TestFeedFollowsLimitEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	m := startMirror(t, s, monitor.FeedConfig{})
	waitFor(t, m, "the first sync", func(st *monitor.State) bool { return st.Synced() })
	if _, err := s.SetLimit(ctx, "acme", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, data.Key{Account: "acme", Session: "chat-1"}, uuid.New(), time.Minute, "desktop"); err == nil {
		t.Fatal("acquire in an account with a limit of 0 was granted")
	}
	if _, err := s.RemoveLimit(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	kinds := func(st *monitor.State) map[data.Kind]data.Event {
		out := map[data.Kind]data.Event{}
		for _, ev := range st.Events() {
			out[ev.Kind] = ev
		}
		return out
	}
	waitFor(t, m, "limit_set, limit_refused and limit_removed", func(st *monitor.State) bool {
		k := kinds(st)
		return k[data.KindLimitSet].ID != 0 && k[data.KindLimitRefused].ID != 0 && k[data.KindLimitRemoved].ID != 0
	})
	m.Read(func(st *monitor.State) {
		set := kinds(st)[data.KindLimitSet]
		if set.Key != (data.Key{Account: "acme"}) || set.Reason != "0 slots" {
			t.Errorf("limit_set = %+v, want account acme, no session, reason \"0 slots\"", set)
		}
		if n := st.Malformed(); n != 0 {
			t.Errorf("%d notifications dropped as malformed, want 0", n)
		}
	})
}
