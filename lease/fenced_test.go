package lease_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// A holder frozen (SIGSTOP) inside FencedTx keeps the lease row locked only
// for the transaction's bound, the lease's remaining safe time: the server
// then ends its session, and a waiting run takes over once the lease
// expires, while the holder is still frozen. Resumed, the holder's write is
// refused with ErrStale and the cause, and nothing it wrote is kept.
func TestFencedTxFrozenHolderIsCutOff(t *testing.T) {
	freezeInFencedTx(t, childBounded, false)
}

// TestFencedTxFrozenHolderGetsErrStale: however the bound ends a frozen
// holder's fenced transaction, FencedTx returns ErrStale with the loss as
// its cause, and nothing is written: frozen inside fn with Do's context
// (cancelled by the loss, as in the README's example) and then writing;
// frozen after fn's write, fn then returning at once so that FencedTx goes
// on to the commit; each directly and through a real PgBouncer in
// transaction mode, where the server ending the session reaches the holder
// as the pooler's error.
func TestFencedTxFrozenHolderGetsErrStale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   string
		pooled bool
	}{
		{"inside fn with Do's context", childDoWrite, false},
		{"inside fn with Do's context through PgBouncer", childDoWrite, true},
		{"inside fn through PgBouncer", childBounded, true},
		{"before commit", childDoCommit, false},
		{"before commit through PgBouncer", childDoCommit, true},
	} {
		t.Run(tc.name, func(t *testing.T) { freezeInFencedTx(t, tc.mode, tc.pooled) })
	}
}

// freezeInFencedTx freezes a child in mode inside its fenced transaction
// (through PgBouncer when pooled), lets a waiter take the lease over while
// the child is frozen, resumes it, and checks that its FencedTx returned
// ErrStale with the loss as cause and wrote nothing.
func freezeInFencedTx(t *testing.T, mode string, pooled bool) {
	db := pgtest.New(t)
	pool := db.Pool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE doc (who text, fence bigint)`); err != nil {
		t.Fatal(err)
	}
	dsn := db.URL
	if pooled {
		dsn = db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 4}))
	}
	frozen := startChild(t, dsn, mode, 2*time.Second)
	frozen.Signal(t, syscall.SIGSTOP)

	w := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	pending := startWait(wctx, w, permit(t, w, testKey, "waiter"))
	pgtest.WaitBackendGone(t, pool, frozen.backend) // the server ended the frozen holder's session
	next := pending.lease(t, 30*time.Second, "after the frozen holder's session ended")
	if frozen.Exited() {
		t.Fatal("the child exited: the takeover must happen while it is frozen")
	}
	over := lastEvent(t, db.Store(t))
	if over.Kind != data.KindTakenOver || over.PrevFence != frozen.fence || over.Fence != next.Fence() {
		t.Fatalf("last event = %+v, want the takeover from fence %d to %d", over, frozen.fence, next.Fence())
	}
	if over.At.Before(over.PrevExpiresAt) {
		t.Errorf("taken over at %v, before the frozen holder's expiry %v", over.At, over.PrevExpiresAt)
	}
	t.Logf("taken over %s after the frozen holder's expiry", over.At.Sub(over.PrevExpiresAt).Round(time.Millisecond))

	frozen.Signal(t, syscall.SIGCONT)
	if _, err := frozen.stdin.Write([]byte("write\n")); err != nil {
		t.Fatal(err)
	}
	<-frozen.Done()
	out := frozen.out.String()
	var done string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "done ") {
			done = strings.TrimSuffix(line, "\n")
		}
	}
	t.Logf("resumed: %s", done)
	if !strings.HasPrefix(done, "done stale=true lost=true err=stale fencing token: ") {
		t.Errorf("the resumed holder's FencedTx: %q, want ErrStale with the lost lease as its cause, on one line; the child wrote:\n%s", done, out)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM doc`).Scan(&n); err != nil || n != 0 {
		t.Errorf("doc rows = %d (%v), want none from the stale holder", n, err)
	}
}

// FencedTx commits fn's write while the lease is held, and refuses it, with
// the cause, once the lease is lost: nothing of fn's is kept.
func TestFencedTxWritesOnlyWhileHeld(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store, pool := db.Store(t), db.Pool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE doc (who text, fence bigint)`); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second})
	l := acquire(t, c, permit(t, c, testKey, "h"))
	write := func(who string) error {
		return l.FencedTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO doc VALUES ($1, $2)`, who, l.Fence())
			return err
		})
	}
	if err := write("held"); err != nil {
		t.Fatalf("FencedTx while held err = %v", err)
	}
	// Inside FencedTx the transaction carries the bound.
	err := l.FencedTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		var idle, stmt string
		if err := tx.QueryRow(ctx, `SELECT current_setting('idle_in_transaction_session_timeout'),
			current_setting('statement_timeout')`).Scan(&idle, &stmt); err != nil {
			return err
		}
		if idle == "0" || idle != stmt {
			t.Errorf("inside FencedTx: idle_in_transaction_session_timeout %s, statement_timeout %s; want the same bound, not 0", idle, stmt)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := store.ForceRelease(ctx, testKey, l.RunID(), "test"); err != nil {
		t.Fatal(err)
	}
	if err := write("after the forced release"); !errors.Is(err, lease.ErrStale) {
		t.Errorf("FencedTx after a forced release err = %v, want ErrStale", err)
	}
	waitDone(t, l, 20*time.Second)
	err = write("after the loss")
	if !errors.Is(err, lease.ErrStale) || !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrForceReleased) {
		t.Errorf("FencedTx after the loss err = %v, want ErrStale with the loss as its cause", err)
	}
	rows, _ := pool.Query(ctx, `SELECT who FROM doc`)
	whos, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(whos, ",") != "held" {
		t.Errorf("doc = %v (%v), want only the write made while held", whos, err)
	}
}

// lastEvent returns the most recent event of testKey.
func lastEvent(t *testing.T, s *data.Store) data.Event {
	t.Helper()
	evs, err := s.EventsFor(context.Background(), testKey, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("EventsFor = %v, %v", evs, err)
	}
	return evs[0]
}
