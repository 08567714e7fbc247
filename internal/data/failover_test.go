package data_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// floor2 is lease.failover_floor() on WAL timeline 2 (one failover): 2^43.
const floor2 = int64(1) << 43

// afterFailover makes db's server look to the lease functions as if it had
// been promoted once (a failover_floor of 2^43), as a standby's first writes
// after a failover see it. (A real promotion: internal/faults'
// TestFailoverAsynchronous.)
func afterFailover(t *testing.T, db pgtest.DB) {
	t.Helper()
	if _, err := db.Conn(t).Exec(context.Background(),
		`CREATE OR REPLACE FUNCTION lease.failover_floor() RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT 8796093022208::bigint'`); err != nil {
		t.Fatal(err)
	}
}

// The first write after a failover (on a new WAL timeline) moves the fence
// sequence and the event ids past anything an earlier WAL timeline handed
// out, whichever write it is (here a release), and only once: later fences
// and ids go on from there.
func TestFailoverMovesFencesAndEventIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acct", Session: "failover"}
	run := uuid.New()
	before := mustAcquire(t, s, k, run, time.Minute)
	if before.Fence >= floor2 {
		t.Fatalf("fence %d on WAL timeline 1, want it below 2^43 (nothing moves before a failover)", before.Fence)
	}

	afterFailover(t, db)
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	after := mustAcquire(t, s, k, uuid.New(), time.Minute)
	again := mustAcquire(t, s, data.Key{Account: "acct", Session: "other"}, uuid.New(), time.Minute)
	evs := events(t, s)
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4 (acquired, released, acquired, acquired)", len(evs))
	}
	if evs[0].ID >= floor2 || evs[1].ID < floor2 {
		t.Errorf("event ids %d then %d: want the release, the first write after the failover, at 2^43 or above", evs[0].ID, evs[1].ID)
	}
	if evs[2].ID != evs[1].ID+1 || evs[3].ID != evs[2].ID+1 {
		t.Errorf("event ids %d, %d, %d: want them to go on from the first one after the failover, moved once", evs[1].ID, evs[2].ID, evs[3].ID)
	}
	if after.Fence < floor2 || again.Fence != after.Fence+1 {
		t.Errorf("fences %d then %d after the failover, want 2^43 or above and consecutive", after.Fence, again.Fence)
	}
}

// The first writer after a failover holds lease.schema_version's row while
// it moves the sequences. A concurrent first writer does not wait for it
// (it could hold a lease row another writer waits for: a deadlock) but
// fails with 40001, nothing changed; once the first has committed, writes
// go on.
func TestFailoverFirstWritersDoNotWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	afterFailover(t, db)
	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT FROM lease.schema_version FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	k := data.Key{Account: "acct", Session: "first"}
	_, err = s.Acquire(ctx, k, uuid.New(), time.Minute, "first")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
		t.Fatalf("Acquire while another first writer holds the row: err = %v, want SQLSTATE 40001 at once", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if g := mustAcquire(t, s, k, uuid.New(), time.Minute); g.Fence < floor2 {
		t.Errorf("fence %d after the other writer let go, want 2^43 or above", g.Fence)
	}
	if n := len(events(t, s)); n != 1 {
		t.Errorf("%d events, want the one grant (the refused attempt wrote nothing)", n)
	}
}

// Every function that inserts into lease.event or draws a fence calls
// lease.follow_failover first, so no write after a failover can hand out an
// id or a fence before the sequences moved past the old primary's. (Merging
// SQL that adds such a write must add the call too.)
func TestEveryEventAndFenceWriterFollowsFailover(t *testing.T) {
	t.Parallel()
	const check = "IF lease.follow_failover() THEN NULL; END IF;"
	fn := regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION (lease\.\w+)\(.*?\n\$fn\$;`)
	writes := regexp.MustCompile(`INSERT INTO lease\.event\b|nextval\('lease\.fence_seq'\)`)
	found := 0
	for _, f := range leasesql.Files() {
		for _, m := range fn.FindAllStringSubmatch(f.SQL, -1) {
			body, name := m[0], m[1]
			if name == "lease.move_past_failover" {
				continue // the move itself
			}
			loc := writes.FindStringIndex(body)
			if loc == nil {
				continue
			}
			found++
			if i := strings.Index(body, check); i < 0 || i > loc[0] {
				t.Errorf("%s (%s) writes %q before %q", name, f.Name, body[loc[0]:loc[1]], check)
			}
		}
	}
	if found < 4 {
		t.Errorf("found %d functions that insert events or draw fences, want at least acquire, renew and the two triggers", found)
	}
}
