package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

func TestTokenCheckRefusesStaleRun(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	pool := db.Pool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE doc (body text, fence bigint)`); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second})
	old := acquire(t, c, permit(t, c, testKey, "old"))
	if _, err := store.ForceRelease(ctx, testKey, old.RunID(), "takeover"); err != nil {
		t.Fatal(err)
	}
	cur := acquire(t, c, permit(t, c, testKey, "new"))

	write := func(tok lease.Token, body string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := tok.Check(ctx, tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO doc VALUES ($1, $2)`, body, tok.Fence)
			return err
		})
	}
	if err := write(old.Token(), "stale"); !errors.Is(err, lease.ErrStale) {
		t.Errorf("write with the old token err = %v, want ErrStale", err)
	}
	if err := write(cur.Token(), "fresh"); err != nil {
		t.Errorf("write with the current token err = %v", err)
	}
	wrongFence := cur.Token()
	wrongFence.Fence = old.Fence()
	if err := write(wrongFence, "mixed"); !errors.Is(err, lease.ErrStale) {
		t.Errorf("write with the current run but an old fence err = %v, want ErrStale", err)
	}
	var bodies []string
	rows, _ := pool.Query(ctx, `SELECT body FROM doc`)
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(bodies, ",") != "fresh" {
		t.Errorf("doc = %v, %v; want only the fresh write", bodies, err)
	}
}

// The check locks the lease row FOR SHARE: a takeover or forced release
// waits until the protected write's transaction ends.
func TestCheckFenceBlocksTakeoverUntilCommit(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	ctx := context.Background()
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second})
	l := acquire(t, c, permit(t, c, testKey, "h"))
	conn := db.Conn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := l.CheckFence(ctx, tx); err != nil {
		t.Fatalf("CheckFence err = %v", err)
	}
	type result struct {
		ok  bool
		err error
	}
	forced := make(chan result, 1)
	go func() {
		ok, err := store.ForceRelease(ctx, testKey, l.RunID(), "operator")
		forced <- result{ok, err}
	}()
	pool := db.Pool(t)
	pgtest.Eventually(t, 30*time.Second, "the forced release to wait for the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%force_release%'`).Scan(&n)
		return err == nil && n == 1
	})
	select {
	case r := <-forced:
		t.Fatalf("forced release finished while the fence-checked transaction was open: %+v", r)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-forced
	if r.err != nil || !r.ok {
		t.Errorf("forced release after commit = %+v, want ok", r)
	}
}
