package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// A transaction that fence-checked a lease and sits idle is found as the
// lease's locker, with its state and age for a role that may see them, and
// by pid alone for the monitor's lease_reader. A lease nobody locks has no
// locker.
func TestLockers(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	k := data.Key{Account: "acct", Session: "locked"}
	free := data.Key{Account: "acct", Session: "free"}
	run := uuid.New()
	g := mustAcquire(t, s, k, run, time.Second)
	mustAcquire(t, s, free, uuid.New(), time.Minute)

	writer := db.Conn(t)
	if _, err := writer.Exec(ctx, `SET application_name = 'fenced writer'`); err != nil {
		t.Fatal(err)
	}
	tx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := data.CheckFence(ctx, tx, k, run, g.Fence); err != nil {
		t.Fatalf("CheckFence err = %v", err)
	}
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitExpired(t, db.Pool(t), k) // expired, and still locked: no takeover can commit

	got, err := s.Lockers(ctx, k)
	if err != nil {
		t.Fatalf("Lockers err = %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("Lockers(%v) = %+v, want the one fenced transaction", k, got)
	}
	lk := got[0]
	if lk.PID != pid || !lk.Visible || lk.State != "idle in transaction" || lk.App != "fenced writer" || lk.User == "" ||
		lk.InTx <= 0 || lk.InState <= 0 || lk.InState > lk.InTx {
		t.Errorf("Lockers(%v) = %+v, want pid %d idle in transaction, with its app, user and times", k, lk, pid)
	}

	reader, err := data.Open(ctx, db.ReaderURL(t))
	if err != nil {
		t.Fatalf("open as lease_reader: %v", err)
	}
	defer reader.Close()
	got, err = reader.Lockers(ctx, k)
	if err != nil {
		t.Fatalf("Lockers as lease_reader err = %v", err)
	}
	if len(got) != 1 || got[0].PID != pid || got[0].App != "fenced writer" || got[0].Visible || got[0].State != "" || got[0].InTx != 0 {
		t.Errorf("Lockers as lease_reader = %+v, want pid %d and its app, without the state and times it may not see", got, pid)
	}

	for _, key := range []data.Key{free, {Account: "acct", Session: "none"}} {
		if got, err := s.Lockers(ctx, key); err != nil || len(got) != 0 {
			t.Errorf("Lockers(%v) = %+v, %v; want none", key, got, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Lockers(ctx, k); err != nil || len(got) != 0 {
		t.Errorf("Lockers(%v) after commit = %+v, %v; want none", k, got, err)
	}
}
