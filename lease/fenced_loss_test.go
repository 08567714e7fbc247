package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestFencedTxLeaseEndsWhileFnRuns: when the lease ends while fn runs,
// FencedTx returns ErrStale with the lease's end as its cause, whichever
// context the caller gave it (Do's, which the loss cancels too, or the
// lease's own) and wherever fn was: waiting between statements, or inside a
// statement. Directly and through a real PgBouncer in transaction mode.
// Nothing fn wrote is kept.
func TestFencedTxLeaseEndsWhileFnRuns(t *testing.T) {
	// The fenced transaction locks the lease row FOR SHARE, so the
	// heartbeat's renewals wait behind it: the lease runs out at its local
	// deadline (ErrExpired) unless released first. (A renewal confirmed
	// after FencedTx read the deadline but before its fence check locked
	// the row moves the lease's deadline past the transaction's: the
	// transaction is then cut at its own deadline while the lease still
	// holds, and ErrStale's cause says the transaction outlived it.)
	type scenario struct {
		name string
		// fn is the fenced function; entered is closed when it has
		// started, before anything ends the lease.
		fn func(ctx context.Context, tx pgx.Tx, l *lease.Lease, entered chan<- struct{}) error
		// end ends the lease once fn has started (nil: the deadline does).
		end  func(l *lease.Lease)
		want []error
	}
	write := func(ctx context.Context, tx pgx.Tx, l *lease.Lease) error {
		_, err := tx.Exec(ctx, `INSERT INTO doc VALUES ('holder', $1)`, l.Fence())
		return err
	}
	waitThenWrite := func(ctx context.Context, tx pgx.Tx, l *lease.Lease, entered chan<- struct{}) error {
		if err := write(ctx, tx, l); err != nil {
			return err
		}
		close(entered)
		<-ctx.Done()
		return write(ctx, tx, l)
	}
	scenarios := []scenario{
		{name: "deadline passes while fn waits", fn: waitThenWrite, want: []error{lease.ErrStale, lease.ErrLost, lease.ErrExpired}},
		{name: "deadline passes inside a statement", fn: func(ctx context.Context, tx pgx.Tx, l *lease.Lease, entered chan<- struct{}) error {
			if err := write(ctx, tx, l); err != nil {
				return err
			}
			close(entered)
			_, err := tx.Exec(ctx, `SELECT pg_sleep(600)`)
			return err
		}, want: []error{lease.ErrStale, lease.ErrLost, lease.ErrExpired}},
		{name: "released while fn waits", fn: waitThenWrite, end: func(l *lease.Lease) {
			_ = l.Release(context.Background()) // its delete waits for the fenced transaction
		}, want: []error{lease.ErrStale, lease.ErrReleased}},
	}
	for _, via := range []string{"direct", "PgBouncer"} {
		for _, sc := range scenarios {
			t.Run(via+"/"+sc.name, func(t *testing.T) {
				ctx := context.Background()
				db := pgtest.New(t)
				if _, err := db.Pool(t).Exec(ctx, `CREATE TABLE doc (who text, fence bigint)`); err != nil {
					t.Fatal(err)
				}
				store := db.Store(t)
				if via == "PgBouncer" {
					store = pgtest.OpenStore(t, db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 4})), data.Options{})
				}
				c := newClient(t, store, lease.Config{TTL: 2 * time.Second})
				var fenced error
				_ = c.Do(ctx, permit(t, c, testKey, "holder"), lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
					entered := make(chan struct{})
					ended := make(chan struct{})
					go func() {
						defer close(ended)
						select {
						case <-entered:
							if sc.end != nil {
								sc.end(l)
							}
						case <-l.Done():
						}
					}()
					fenced = l.FencedTx(ctx, store.Pool(), func(ctx context.Context, tx pgx.Tx) error {
						return sc.fn(ctx, tx, l, entered)
					})
					<-ended
					return fenced
				})
				outlived := sc.end == nil && errors.Is(fenced, lease.ErrStale) && !errors.Is(fenced, lease.ErrLost) &&
					strings.Contains(fenced.Error(), "outlived the lease's safe deadline")
				for _, want := range sc.want {
					if !errors.Is(fenced, want) && !outlived {
						t.Errorf("FencedTx err = %v, want errors.Is %v", fenced, want)
					}
				}
				if outlived {
					t.Logf("a renewal moved the lease's deadline past the transaction's: %v", fenced)
				}
				if fenced != nil && strings.Contains(fenced.Error(), "\n") {
					t.Errorf("FencedTx err is not one line: %q", fenced)
				}
				var n int
				if err := db.Pool(t).QueryRow(ctx, `SELECT count(*) FROM doc`).Scan(&n); err != nil || n != 0 {
					t.Errorf("doc rows = %d (%v), want none", n, err)
				}
				if ev := lastEvent(t, db.Store(t)); ev.Kind == data.KindTakenOver {
					t.Errorf("last event %+v: nobody else competed", ev)
				}
			})
		}
	}
}

// TestFencedSQLTxLeaseEndsWhileFnRuns: FencedSQLTx, given the lease's own
// context, returns ErrStale with ErrReleased when the lease is released
// while fn waits (database/sql rolls the transaction back itself when its
// context ends), and again, before beginning anything, afterwards. Nothing
// fn wrote is kept.
func TestFencedSQLTxLeaseEndsWhileFnRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.Pool(t).Exec(ctx, `CREATE TABLE doc (who text, fence bigint)`); err != nil {
		t.Fatal(err)
	}
	sqlDB, err := sql.Open("pgx", db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	c := newClient(t, db.Store(t), lease.Config{TTL: 10 * time.Second})
	l := acquire(t, c, permit(t, c, testKey, "holder"))
	released := make(chan error, 1)
	write := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO doc VALUES ('holder', $1)`, l.Fence())
		return err
	}
	err = l.FencedSQLTx(l.Context(), sqlDB, func(ctx context.Context, tx *sql.Tx) error {
		if err := write(ctx, tx); err != nil {
			return err
		}
		go func() { released <- l.Release(context.Background()) }() // its delete waits for this transaction
		<-ctx.Done()
		return write(ctx, tx)
	})
	if !errors.Is(err, lease.ErrStale) || !errors.Is(err, lease.ErrReleased) {
		t.Errorf("FencedSQLTx released while fn waits err = %v, want ErrStale with ErrReleased", err)
	}
	if err := <-released; err != nil {
		t.Errorf("Release: %v", err)
	}
	err = l.FencedSQLTx(l.Context(), sqlDB, write)
	if !errors.Is(err, lease.ErrStale) || !errors.Is(err, lease.ErrReleased) {
		t.Errorf("FencedSQLTx after the release err = %v, want ErrStale with ErrReleased", err)
	}
	var n int
	if err := db.Pool(t).QueryRow(ctx, `SELECT count(*) FROM doc`).Scan(&n); err != nil || n != 0 {
		t.Errorf("doc rows = %d (%v), want none", n, err)
	}
}
