package monitor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestFeedIgnoresATransitionItsSnapshotOutdated: a resync's snapshot already
// reflects every transition committed before it, but returns as events only
// those above its window (1000 ids below the newest delivered). A transition
// below the window that the consumer had not seen, delivered after that
// snapshot, is older than it, and must not change the leases: here an
// acquire whose lease was released before the snapshot would show that lease
// again, for good (LIVE, no gap), while the database has none.
//
// After an asynchronous Patroni failover the transitions the old primary
// committed last (the new primary has those it replicated) are such events:
// their notifications died with the old primary, and the listener's catch-up
// reads them on the new primary, from where it stood on the old one, after
// the new primary's snapshot, which reflects what the holders did since the
// promotion (a release). Here without a failover: the acquire's transaction
// is held open while 20 other transitions move the window (10 ids) past its
// id, its notification is sent only after the resync (as the library sends
// its own after the commit), and the catch-up is off, so the notification
// is what delivers it.
func TestFeedIgnoresATransitionItsSnapshotOutdated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn, writer := db.Store(t), db.Conn(t), db.Store(t)
	m := startMirror(t, s, monitor.FeedConfig{
		Window:        10,
		Listener:      data.ListenerConfig{CatchUp: -1},
		DeltaInterval: time.Hour, NotifiedInterval: time.Hour,
	})
	waitFor(t, m, "the first resync", func(st *monitor.State) bool { return st.Synced() })

	// The acquire draws its id, and commits after 20 others.
	late := data.Key{Account: "stale", Session: "late"}
	run := uuid.New()
	held := db.Conn(t)
	tx, err := held.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var acquired int64
	if err := tx.QueryRow(ctx, `SELECT `+silent+`, (SELECT fence FROM lease.acquire($1, $2, $3, '1 hour', 'late'))`,
		late.Account, late.Session, run).Scan(new(string), new(int64)); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT max(id) FROM lease.event WHERE session_id = $1`, late.Session).Scan(&acquired); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		monitor.MustAcquire(t, writer, data.Key{Account: "stale", Session: fmt.Sprint("other-", i)}, uuid.New(), time.Hour)
	}
	waitFor(t, m, "the 20 other leases", func(st *monitor.State) bool { return st.Len() == 20 })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Released, unnotified too; the resync reads the release (above its
	// window) and a snapshot without the lease, not the acquire (below it).
	var released int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT `+silent+`, lease.release($1, $2, $3)`, late.Account, late.Session, run); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT max(id) FROM lease.event WHERE session_id = $1`, late.Session).Scan(&released)
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Feed().Resync()
	waitFor(t, m, "the resync that read the release", func(st *monitor.State) bool { return st.Seen(released) })
	var seen bool
	m.Read(func(st *monitor.State) { seen = st.Seen(acquired) })
	if seen {
		t.Fatalf("the resync returned the acquire %d: it is not below the window, the test tests nothing", acquired)
	}

	// The notifications the library sends after each commit, now.
	for _, id := range []int64{acquired, released} {
		if _, err := conn.Exec(ctx, `SELECT pg_notify('lease_events', row_to_json(e)::text) FROM lease.event e WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, m, "the late acquire", func(st *monitor.State) bool { return st.Seen(acquired) })
	assertMirrorsDB(t, m, conn)
}

// silent opts the transaction out of the trigger's NOTIFY, as the library
// does before it notifies after the commit.
const silent = `set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`
