package data_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestMigrateProgress: a migration with Progress reports each SQL file as
// it starts, in order, and, while a session holds a lock it needs, that
// its server process waits for a lock; the migration goes on when the lock
// is released.
func TestMigrateProgress(t *testing.T) {
	defer data.SetActivityEvery(10 * time.Millisecond)()
	ctx := context.Background()
	db := pgtest.New(t)
	blocker := db.Conn(t)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `LOCK TABLE lease.session_lease IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		files   []string
		waiting = make(chan data.MigrateProgress, 1)
	)
	done := make(chan error, 1)
	go func() {
		_, err := data.MigrateWith(ctx, db.Conn(t), data.MigrateOptions{Wait: time.Minute, Progress: func(p data.MigrateProgress) {
			if p.Waiting != "" {
				select {
				case waiting <- p:
				default:
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if p.Building == "" && (len(files) == 0 || files[len(files)-1] != p.File) {
				files = append(files, p.File)
			}
		}})
		done <- err
	}()
	select {
	case p := <-waiting:
		if p.Waiting != "relation" || p.File == "" {
			t.Errorf("waiting report = %+v, want a relation lock in a file", p)
		}
		t.Logf("reported: %+v", p)
	case err := <-done:
		t.Fatalf("the migration ended (%v) without reporting its wait for the lock", err)
	case <-time.After(time.Minute):
		t.Fatal("no report of the wait for the lock within a minute")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("migrate after the lock was released: %v", err)
	}
	var want []string
	for _, f := range leasesql.Files() {
		want = append(want, f.Name)
	}
	mu.Lock()
	defer mu.Unlock()
	if i := slices.Index(files, want[0]); len(files) < len(want) || !slices.Equal(files[len(files)-len(want):], want) || i < 0 {
		t.Errorf("files reported %v, want the last attempt's to be %v", files, want)
	}
}

// TestMaintainProgress: maintain with Progress reports that
// lease.maintain_events waits for a lock while a session holds the
// default partition in a conflicting mode; released, the maintenance moves
// the row that waited there.
func TestMaintainProgress(t *testing.T) {
	defer data.SetActivityEvery(10 * time.Millisecond)()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `INSERT INTO lease.event (at, kind, account_id, session_id) VALUES (clock_timestamp() + interval '40 days', 'acquired', 'acme', 'later')`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE lease.event_default IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var seen data.Activity
	changes, err := s.MaintainEvents(ctx, data.MaintainOptions{Progress: func(a data.Activity) {
		if a.Waiting != "" {
			once.Do(func() {
				seen = a
				_ = tx.Rollback(ctx) // let it through
			})
		}
	}})
	_ = tx.Rollback(ctx)
	if seen.Waiting != "relation" {
		t.Fatalf("reports saw no relation lock wait (%+v); maintain returned %v, %v", seen, changes, err)
	}
	if err != nil {
		t.Fatalf("maintain after the lock was released: %v", err)
	}
	if !slices.ContainsFunc(changes, func(c data.PartitionChange) bool { return c.Action == "moved" && c.Rows == 1 }) {
		t.Errorf("changes = %+v, want the waiting row moved", changes)
	}
}
