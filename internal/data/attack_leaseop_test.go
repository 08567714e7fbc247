package data_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestForgedLeaseOpHidesNoTransition: lease.acquire and lease.release write
// their own events and tell the trigger so in lease.op ('acquire',
// 'release'), which the trigger's WHEN then skips (sql/triggers.sql). A
// caller can set lease.op itself, for its session (PGOPTIONS) or its
// transaction; every transition must still be recorded exactly once:
// acquire, release, preempt of a free key and of a held one, and an
// operator's forced release.
func TestForgedLeaseOpHidesNoTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	appDSN, _ := pgtest.Login(t, db, "lease_app")
	preemptDSN, _ := pgtest.Login(t, db, "lease_preempt")
	adminDSN, _ := pgtest.Login(t, db, "lease_admin")
	connect := func(dsn, op string) *pgx.Conn {
		t.Helper()
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["lease.op"] = op
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	for _, op := range []string{"acquire", "release"} {
		t.Run(op, func(t *testing.T) {
			app, pre, admin := connect(appDSN, op), connect(preemptDSN, op), connect(adminDSN, op)
			k := data.Key{Account: "acme", Session: "forged " + op}
			a, b, c := uuid.New(), uuid.New(), uuid.New()
			steps := []struct {
				conn *pgx.Conn
				sql  string
				args []any
				kind string
			}{
				{app, `SELECT count(*) FROM lease.acquire($1, $2, $3, '1 minute', 'a')`, []any{k.Account, k.Session, a}, "acquired"},
				{app, `SELECT lease.release($1, $2, $3)`, []any{k.Account, k.Session, a}, "released"},
				{pre, `SELECT count(*) FROM lease.preempt($1, $2, $3, '1 minute', 'b', 'free')`, []any{k.Account, k.Session, b}, "acquired"},
				{pre, `SELECT count(*) FROM lease.preempt($1, $2, $3, '1 minute', 'c', 'held')`, []any{k.Account, k.Session, c}, "preempted"},
				{admin, `SELECT lease.force_release($1, $2, NULL, 'ended')`, []any{k.Account, k.Session}, "force_released"},
			}
			for i, st := range steps {
				// Also forged in the call's own transaction.
				err := pgx.BeginFunc(ctx, st.conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `SELECT set_config('lease.op', $1, true)`, op); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, st.sql, st.args...)
					return err
				})
				if err != nil {
					t.Fatalf("step %d (%s) with lease.op %q: %v", i, st.kind, op, err)
				}
				evs, err := owner.EventsFor(ctx, k, 100)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := len(evs), i+1; got != want {
					t.Fatalf("after step %d (%s) with lease.op %q: %d events, want %d", i, st.kind, op, got, want)
				}
				if got := string(evs[0].Kind); got != st.kind {
					t.Errorf("step %d with lease.op %q recorded %s, want %s", i, op, got, st.kind)
				}
			}
		})
	}
}

// TestEveryLeaseWriterSetsLeaseOp: the trigger leaves the event of a row
// written with lease.op 'acquire' or 'release' to the function that wrote
// it (sql/triggers.sql). So every function that inserts or deletes a
// lease row, or gives it a new owner, sets lease.op itself before: a value
// the caller set must never reach the trigger.
func TestEveryLeaseWriterSetsLeaseOp(t *testing.T) {
	write := regexp.MustCompile(`^\s*(INSERT INTO|DELETE FROM|UPDATE) lease\.session_lease\b`)
	fn := regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION (lease\.\w+)\(.*?\n\$fn\$;`)
	writers := 0
	for _, f := range leasesql.Files() {
		for _, body := range fn.FindAllStringSubmatch(f.SQL, -1) {
			lines := strings.Split(body[0], "\n")
			for i, line := range lines {
				if !write.MatchString(line) || !changesOwner(lines[i:]) {
					continue
				}
				writers++
				if !strings.Contains(strings.Join(lines[:i], "\n"), "set_config('lease.op'") {
					t.Errorf("%s: %s writes lease.session_lease (%q) without setting lease.op first", f.Name, body[1], strings.TrimSpace(line))
				}
			}
		}
	}
	if writers < 5 { // acquire, release, force_release, preempt (twice), hand_over
		t.Errorf("found %d writers of lease.session_lease, want at least 5: update the test", writers)
	}
}

// changesOwner reports whether the statement starting at stmt[0] records an
// ownership change: an INSERT or DELETE, or an UPDATE whose SET list
// assigns a fence (a new owner always gets one). A renewal or a new
// attachment fires no ownership trigger.
func changesOwner(stmt []string) bool {
	if !strings.Contains(stmt[0], "UPDATE") {
		return true
	}
	assign := regexp.MustCompile(`\bfence\s*=`)
	for _, l := range stmt[1:] {
		if strings.Contains(strings.TrimSpace(l), "WHERE") || strings.Contains(l, ";") {
			return false
		}
		if assign.MatchString(l) {
			return true
		}
	}
	return false
}
