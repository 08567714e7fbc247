package data_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestCallsUseTheKeyIndexOfAChurnedTable: a platform's sessions come and go,
// so lease.session_lease keeps a few live rows in a table whose key index
// grew with every session it ever held. PostgreSQL's estimate for one key
// through such an index (its pages over its few tuples) then comes out
// above a scan of the whole heap, and the functions' lookups by key chose
// the sequential scan: in a long bench database 165 heap pages read on every
// acquire and release, about 10 % of a cycle's server CPU. The entry points
// set enable_seqscan off (sql/functions.sql's header), so every lookup by
// key uses the index whatever the statistics say.
func TestCallsUseTheKeyIndexOfAChurnedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	churn(t, conn)
	var plan string
	if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT TEXT) SELECT 1 FROM lease.session_lease WHERE account_id = 'a' AND session_id = 'b'`).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	t.Logf("the planner's own choice for one key: %s", plan)

	run, other := uuid.New(), uuid.New()
	calls := []struct {
		name, sql string
		run       uuid.UUID
	}{
		{"acquire", `SELECT count(*) FROM lease.acquire('acct', 'churned', $1, '1 minute', 'h')`, run},
		{"renew", `SELECT lease.renew('acct', 'churned', $1, '1 minute')`, run},
		{"check_fence", `SELECT lease.check_fence('acct', 'churned', $1, 1)`, run},
		{"release", `SELECT lease.release('acct', 'churned', $1)`, run},
		{"acquire again", `SELECT count(*) FROM lease.acquire('acct', 'churned', $1, '1 minute', 'h')`, run},
		{"preempt", `SELECT count(*) FROM lease.preempt('acct', 'churned', $1, '1 minute', 'h', 'test')`, other},
		{"force_release", `SELECT lease.force_release('acct', 'churned', lease.public_run_id($1), 'test')`, other},
	}
	for _, c := range calls {
		before := seqScans(t, conn)
		if _, err := conn.Exec(ctx, c.sql, c.run); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := seqScans(t, conn) - before; n != 0 {
			t.Errorf("%s scanned lease.session_lease sequentially %d times, want its key index", c.name, n)
		}
	}
}

// seqScans is the server's count of sequential scans of
// lease.session_lease, with this session's own flushed into it first (a
// backend flushes its counts at most once a second unless told to).
func seqScans(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relid = 'lease.session_lease'::regclass`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// churn makes lease.session_lease a churned table: 300,000 sessions held and
// gone, then a few live among churned rows; the planner then prefers a
// sequential scan for one key.
func churn(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		 SELECT 'gone', md5(g::text), gen_random_uuid(), '', g, now(), now(), now() + interval '1 hour' FROM generate_series(1, 300000) g`,
		`DELETE FROM lease.session_lease`,
		`VACUUM lease.session_lease`,
		`INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		 SELECT 'churn', md5(g::text), gen_random_uuid(), '', g, now(), now(), now() + interval '1 hour' FROM generate_series(1, 8000) g`,
		`DELETE FROM lease.session_lease WHERE session_id >= '0040'`,
		`RESET session_replication_role`,
		`ANALYZE lease.session_lease`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestKeyReadsUseTheKeyIndexOfAChurnedTable: the library's own reads by key
// (the refusal's details after a refused acquire, and the holder watch's
// check) find the row through the key index of a churned table too, as the
// functions do (byKeyIndex); they used to scan the table.
func TestKeyReadsUseTheKeyIndexOfAChurnedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	churn(t, conn)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one backend, whose counts the test flushes
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := data.New(pool)
	key, holder := data.Key{Account: "acct", Session: "churned"}, uuid.New()
	g, err := store.Acquire(ctx, key, holder, time.Minute, "h")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"a refused acquire's details", func() error {
			_, err := store.Acquire(ctx, key, uuid.New(), time.Minute, "other")
			if !errors.Is(err, data.ErrHeld) {
				return fmt.Errorf("acquire of a held key: %v, want ErrHeld", err)
			}
			return nil
		}},
		{"the holder's check", func() error {
			_, err := store.CheckHolder(ctx, key, data.PublicRunID(holder), g.Fence)
			return err
		}},
	} {
		before := poolSeqScans(t, pool)
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := poolSeqScans(t, pool) - before; n != 0 {
			t.Errorf("%s scanned lease.session_lease sequentially %d times, want its key index", c.name, n)
		}
	}
}

// poolSeqScans is seqScans through pool's one connection.
func poolSeqScans(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	c, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	return seqScans(t, c.Conn())
}
