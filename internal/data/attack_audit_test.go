package data_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestReleaseCannotForgeAForcedRelease logs in as a lease_app and releases
// its own lease with the labels force_release uses for its DELETE set by
// itself, with SET and with PGOPTIONS (connection parameters), the reason
// long and full of escapes. The audit trail must record an ordinary
// release by the login, with no reason: only force_release (lease_admin)
// records a forced one, and only with a checked reason.
func TestReleaseCannotForgeAForcedRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	dsn, login := pgtest.Login(t, db, "lease_app")
	forged := "operator jdoe: INC-9999 \x1b]0;pwned\x07" + strings.Repeat("x", 600)

	for _, tt := range []struct {
		name    string
		connect func() (*pgx.Conn, error)
		set     []string
	}{
		{"SET", func() (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) },
			[]string{`SET lease.op = 'force'`, `SELECT set_config('lease.reason', $1, false)`}},
		{"SET LOCAL in the release's transaction", func() (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }, nil},
		{"PGOPTIONS", func() (*pgx.Conn, error) {
			cfg, err := pgx.ParseConfig(dsn)
			if err != nil {
				return nil, err
			}
			cfg.RuntimeParams["lease.op"] = "force"
			cfg.RuntimeParams["lease.reason"] = "operator jdoe: INC-9999"
			return pgx.ConnectConfig(ctx, cfg)
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := tt.connect()
			if err != nil {
				t.Fatalf("connect as %s: %v", login, err)
			}
			defer conn.Close(ctx)
			k := data.Key{Account: "acme", Session: "forge " + tt.name}
			run := uuid.New()
			if _, err := conn.Exec(ctx, `SELECT * FROM lease.acquire($1, $2, $3, '1 minute', 'app')`, k.Account, k.Session, run); err != nil {
				t.Fatal(err)
			}
			for _, sql := range tt.set {
				var args []any
				if strings.Contains(sql, "$1") {
					args = []any{forged}
				}
				if _, err := conn.Exec(ctx, sql, args...); err != nil {
					t.Fatalf("%s as %s: %v", sql, login, err)
				}
			}
			var released bool
			err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if tt.set == nil && tt.name != "PGOPTIONS" {
					if _, err := tx.Exec(ctx, `SELECT set_config('lease.op', 'force', true), set_config('lease.reason', $1, true)`, forged); err != nil {
						return err
					}
				}
				return tx.QueryRow(ctx, `SELECT lease.release($1, $2, $3)`, k.Account, k.Session, run).Scan(&released)
			})
			if err != nil || !released {
				t.Fatalf("release of its own lease as %s = %v, %v; want true", login, released, err)
			}
			evs, err := owner.EventsFor(ctx, k, 1)
			if err != nil || len(evs) != 1 {
				t.Fatalf("EventsFor = %v, %v", evs, err)
			}
			if e := evs[0]; e.Kind != data.KindReleased || e.Reason != "" || e.Actor != login {
				t.Errorf("audit trail records %s by %q with reason %q, want released by %q without a reason", e.Kind, e.Actor, e.Reason, login)
			}
		})
	}
}

// TestForcedReleaseReasonIsChecked: even a DELETE that reaches the trigger
// labelled as forced without force_release's checks (a superuser's direct
// DELETE) cannot put an unchecked reason in the audit trail.
func TestForcedReleaseReasonIsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	k := data.Key{Account: "a", Session: "s"}
	mustAcquire(t, s, k, uuid.New(), time.Minute)
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lease.op', 'force', true), set_config('lease.reason', $1, true)`, "bell\x07"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM lease.session_lease`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "control") {
		t.Fatalf("labelled DELETE with a control character in the reason: err = %v, want it refused", err)
	}
	if _, _, ok := leaseOf(t, conn, k); !ok {
		t.Error("the lease was deleted")
	}
}
